#include "store/store.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/config.h"
#include "core/error.h"
#include "core/files.h"
#include "store/impl.h"
#include "store/schema.h"

namespace nodus::store {
namespace {

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// mkdir -p with mode 0700 for each folder created: the store holds commands and paths.
void make_folders(const std::string& folder, const std::string& store_path) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw Fatal("cannot open store " + store_path + ": " + folder + " is not a folder");
    return;
  }
  std::string parent = parent_of(folder);
  if (parent != folder) make_folders(parent, store_path);
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
    throw Fatal("cannot open store " + store_path + ": cannot create " + folder + ": " +
                std::strerror(errno));
}

// SQLite would open a write-protected file read-only and fail later, on the first write, with a
// vaguer message; the WAL and shared-memory files also need a writable folder.
void check_writable(const std::string& path, const std::string& folder) {
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw Fatal("cannot open store " + path + ": " + std::strerror(errno));
  if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), R_OK | W_OK) != 0)
    throw Fatal("cannot open store " + path + ": " + std::strerror(errno));
}

}  // namespace

Store::Store(std::string path, std::unique_ptr<Impl> impl)
    : path_(std::move(path)), impl_(std::move(impl)) {}

Store::~Store() = default;

std::unique_ptr<Store> Store::open(const std::string& path,
                                   std::chrono::milliseconds busy_timeout) {
  if (path.empty()) throw Fatal("cannot open store: empty path");
  std::string folder = parent_of(path);
  make_folders(folder, path);
  check_writable(path, folder);
  // The store's folder and the job logs and metrics in it hold commands, paths and output:
  // only this user may use them, and a folder someone else owns or can write is refused before
  // anything is stored (core/files.h).
  for (const std::string& sub : {folder, folder + "/logs", folder + "/metrics"}) {
    auto ok = ensure_private_folder(sub, sub == folder);
    if (!ok.ok()) throw Fatal("cannot open store " + path + ": " + ok.error().message);
  }
  bool created = ::access(path.c_str(), F_OK) != 0;
  auto impl = std::make_unique<Impl>(path, busy_timeout);
  if (created) ::chmod(path.c_str(), 0600);
  // Opening a file another process is creating can be answered "busy" at once; retry that
  // (and only that) until the busy timeout, as the busy handler would.
  const auto give_up = std::chrono::steady_clock::now() + busy_timeout;
  for (;;) {
    try {
      configure_connection(impl->db);
      migrate(impl->db);
      break;
    } catch (const Fatal&) {
      if (!impl->db.last_failure_busy() || std::chrono::steady_clock::now() >= give_up) throw;
      ::poll(nullptr, 0, 20);
    }
  }
  return std::unique_ptr<Store>(new Store(path, std::move(impl)));
}

std::unique_ptr<Store> Store::open_read_only(const std::string& path,
                                             std::chrono::milliseconds busy_timeout) {
  if (::access(path.c_str(), R_OK) != 0)
    throw Fatal("cannot read store " + path + ": " + std::strerror(errno));
  auto impl = std::make_unique<Impl>(path, busy_timeout, true);
  const int version = schema_version(impl->db);
  const int latest = migrations().back().version;
  if (version != latest)
    throw Fatal("store " + path + " is read-only and has schema version " +
                std::to_string(version) + "; this nodus reads version " + std::to_string(latest) +
                (version < latest ? ": make it writable once so nodus can upgrade it" : ""));
  auto store = std::unique_ptr<Store>(new Store(path, std::move(impl)));
  store->read_only_ = true;
  return store;
}

std::string Store::default_path() { return nodus_home() + "/nodus.db"; }

std::string Store::folder() const { return parent_of(path_); }

void Store::together(const std::function<void()>& writes) {
  auto lock = impl_->lock();
  Transaction tx(impl_->db, Transaction::Mode::kImmediate);
  writes();
  tx.commit();
}

std::string Store::integrity_check() {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare("PRAGMA integrity_check");
  std::string result;
  while (stmt.step()) {
    if (!result.empty()) result += "; ";
    result += stmt.text(0);
  }
  return result;
}

}  // namespace nodus::store
