#include "store/sqlite.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/proc.h"

namespace nodus::store {
namespace {

// The other processes that hold a POSIX lock on the store (its file, -wal or -shm; SQLite locks
// byte ranges of these), from /proc/locks, write locks first: "pid 412 (nodus, stopped)". Who
// holds a store locked past the busy timeout is what the user needs to act (a supervisor a job
// stopped, a sqlite3 shell left open); "" when none can be named (another user's /proc, an OFD
// lock with no pid, a lock taken and dropped meanwhile).
std::string lock_holders(const std::string& path) {
  std::set<std::string> files;  // "maj:min:inode" as /proc/locks writes it (hex device numbers)
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct stat st {};
    if (::stat((path + suffix).c_str(), &st) != 0) continue;
    char key[64];
    std::snprintf(key, sizeof key, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
                  static_cast<unsigned long long>(st.st_ino));
    files.insert(key);
  }
  auto text = read_small_file("/proc/locks");
  if (!text || files.empty()) return "";
  std::vector<pid_t> writers, readers;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // "1: POSIX  ADVISORY  WRITE 412 08:02:131074 0 EOF"
    std::istringstream f(line);
    std::string id, kind, mode, rw, file;
    long pid = 0;
    if (!(f >> id >> kind >> mode >> rw >> pid >> file) || pid <= 0 || pid == ::getpid()) continue;
    if (!files.count(file)) continue;
    auto& list = rw == "WRITE" ? writers : readers;
    if (std::find(list.begin(), list.end(), pid) == list.end()) list.push_back(pid);
  }
  const auto& pids = writers.empty() ? readers : writers;
  std::string out;
  for (size_t i = 0; i < pids.size() && i < 3; ++i) {
    auto st = read_proc_stat(pids[i]);
    out += (i ? ", pid " : "pid ") + std::to_string(pids[i]);
    if (st)
      out += " (" + st->comm +
             (process_stopped(pids[i]) ? ", stopped: it holds the lock until "
                                         "continued (kill -CONT) or killed"
                                       : "") +
             ")";
  }
  return out;
}

}  // namespace

// ---- Db ----

Db::Db(std::string path, std::chrono::milliseconds busy_timeout, bool read_only)
    : path_(std::move(path)), busy_timeout_(busy_timeout) {
  // NOMUTEX: one connection is used by one thread at a time (Store serializes its callers).
  int rc = sqlite3_open_v2(
      path_.c_str(), &db_,
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
          SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db_ && sqlite3_system_errno(db_) != 0
                          ? std::strerror(sqlite3_system_errno(db_))
                          : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw Fatal("cannot open store " + path_ + ": " + why);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout_.count()));
  // Every `nodus run` opens and closes the store. Checkpointing at close and deleting the WAL
  // cost two fdatasync calls per process (measured: ~20 ms of a 36 ms launch on a loaded
  // machine); the WAL is checkpointed instead by SQLite's automatic checkpoint during commits.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  int persist = 1;
  sqlite3_file_control(db_, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
}

Db::~Db() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close_v2(db_);
}

Stmt Db::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end() && !it->second.in_use) {
    it->second.in_use = true;
    return Stmt(*this, it->second.stmt, &it->second.in_use);
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) fail(rc);
  if (it != cache_.end()) return Stmt(*this, stmt, nullptr);  // cached one is busy (nested use)
  // Map nodes are stable, so the flag's address stays valid while the Db lives.
  Cached& cached = cache_[sql];
  cached = Cached{stmt, true};
  return Stmt(*this, stmt, &cached.in_use);
}

void Db::exec(const std::string& sql) {
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc);
}

static std::string seconds_text(std::chrono::milliseconds ms) {
  std::ostringstream out;
  if (ms.count() % 1000 == 0)
    out << ms.count() / 1000;
  else
    out << static_cast<double>(ms.count()) / 1000.0;
  return out.str();
}

void Db::fail(int rc) const {
  std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  int sys = db_ ? sqlite3_system_errno(db_) : 0;
  last_busy_ = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: {
      const std::string holders = lock_holders(path_);
      throw Fatal("store " + path_ + " is locked by another process for more than " +
                  seconds_text(busy_timeout_) + " s" +
                  (holders.empty() ? "" : ": held by " + holders));
    }
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      throw Fatal("store " + path_ + " is not a nodus database or is corrupt: " + message +
                  "; move it away to start fresh");
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      throw Fatal("cannot open store " + path_ + ": " + (sys != 0 ? std::strerror(sys) : message));
    case SQLITE_FULL:
    case SQLITE_IOERR:
      throw Fatal("cannot write store " + path_ + ": " +
                  (sys != 0 ? std::string(std::strerror(sys)) : message));
    default:
      throw Fatal("store " + path_ + ": " + message);
  }
}

void Db::fail_message(const std::string& what) const {
  throw Fatal("store " + path_ + ": " + what);
}

// ---- Stmt ----

Stmt::Stmt(Db& db, sqlite3_stmt* stmt, bool* in_use) : db_(&db), stmt_(stmt), in_use_(in_use) {}

Stmt::Stmt(Stmt&& other) noexcept : db_(other.db_), stmt_(other.stmt_), in_use_(other.in_use_) {
  other.stmt_ = nullptr;
}

Stmt::~Stmt() {
  if (stmt_ == nullptr) return;
  if (in_use_ == nullptr) {
    sqlite3_finalize(stmt_);
    return;
  }
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  *in_use_ = false;
}

Stmt& Stmt::bind(int i, int64_t v) {
  if (int rc = sqlite3_bind_int64(stmt_, i, v); rc != SQLITE_OK) db_->fail(rc);
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  if (int rc = sqlite3_bind_double(stmt_, i, v); rc != SQLITE_OK) db_->fail(rc);
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  int rc = sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) db_->fail(rc);
  return *this;
}

Stmt& Stmt::bind(int i, std::nullopt_t) {
  if (int rc = sqlite3_bind_null(stmt_, i); rc != SQLITE_OK) db_->fail(rc);
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(rc);  // the destructor resets the statement
}

void Stmt::run() {
  while (step()) {
  }
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int64_t Stmt::i64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::f64(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Stmt::text(int col) const { return std::string(text_view(col)); }

std::string_view Stmt::text_view(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  if (p == nullptr) return {};
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
}

std::optional<int64_t> Stmt::opt_i64(int col) const {
  if (is_null(col)) return std::nullopt;
  return i64(col);
}

std::optional<double> Stmt::opt_f64(int col) const {
  if (is_null(col)) return std::nullopt;
  return f64(col);
}

// ---- ScanCache ----

ScanCache::ScanCache(Db& db) : db_(db) {
  auto stmt = db_.prepare("PRAGMA cache_size");
  before_ = stmt.step() ? stmt.i64(0) : -2000;
  db_.exec("PRAGMA cache_size=-256");
}

ScanCache::~ScanCache() {
  try {
    db_.exec("PRAGMA cache_size=" + std::to_string(before_));
  } catch (const Fatal&) {  // a cache size is no reason to fail the scan that already ended
  }
}

// ---- Transaction ----

Transaction::Transaction(Db& db, Mode mode) : db_(db) {
  if (sqlite3_get_autocommit(db_.handle()) == 0) {  // part of the open one
    open_ = false;
    return;
  }
  db_.exec(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN");
}

Transaction::~Transaction() {
  // SQLite may already have rolled back on its own (e.g. after SQLITE_FULL): then autocommit is on.
  if (open_ && sqlite3_get_autocommit(db_.handle()) == 0)
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  if (!open_) return;  // the outer transaction commits
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace nodus::store
