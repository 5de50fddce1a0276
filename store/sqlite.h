#pragma once
// A thin RAII layer over the SQLite C API, private to the store: a connection (Db) that caches
// prepared statements per SQL string, a statement handle (Stmt) that binds, steps and reads
// columns, and a Transaction that rolls back unless committed. Every SQLite failure becomes a
// one-line nodus::Fatal naming the store's path.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nodus::store {

class Db;

// A prepared statement borrowed from the Db's cache (or owned, when the cached one is in use).
// Parameters are 1-based, columns 0-based, as in SQLite. The destructor resets it for reuse.
class Stmt {
 public:
  // in_use: the cache's flag to clear when done; nullptr for a statement this handle owns.
  Stmt(Db& db, sqlite3_stmt* stmt, bool* in_use);
  Stmt(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& operator=(Stmt&&) = delete;
  ~Stmt();

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, std::nullopt_t);
  template <typename T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind(i, std::nullopt);
  }
  // Binds the arguments to parameters 1, 2, ... in order.
  template <typename... Args>
  Stmt& bind_all(const Args&... args) {
    int i = 0;
    (bind(++i, args), ...);
    return *this;
  }

  // True when a row is ready, false when done. Throws Fatal on error.
  bool step();
  // Steps to completion (for statements that return no rows).
  void run();
  // Makes the statement ready to bind and run again (batched inserts).
  void reset();

  bool is_null(int col) const;
  int64_t i64(int col) const;
  int i32(int col) const { return static_cast<int>(i64(col)); }
  double f64(int col) const;
  std::string text(int col) const;
  // The column's text without a copy: valid until the next step, reset or column call on it.
  std::string_view text_view(int col) const;
  std::optional<int64_t> opt_i64(int col) const;
  std::optional<double> opt_f64(int col) const;

 private:
  Db* db_;
  sqlite3_stmt* stmt_;
  bool* in_use_;
};

class Db {
 public:
  // Opens (creating) the file read-write, or an existing one read-only. Throws Fatal with the
  // path on failure.
  Db(std::string path, std::chrono::milliseconds busy_timeout, bool read_only = false);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() { return db_; }

  // A statement for this SQL, prepared once per connection and reused.
  Stmt prepare(const std::string& sql);
  // Runs one or more statements without results (schema, pragmas, BEGIN/COMMIT).
  void exec(const std::string& sql);
  int64_t last_insert_rowid() { return sqlite3_last_insert_rowid(db_); }
  int changes() { return sqlite3_changes(db_); }

  // Throws the Fatal for an SQLite result code, in words a user can act on.
  [[noreturn]] void fail(int rc) const;
  // True when the last failure was SQLITE_BUSY/LOCKED: some of SQLite's busy answers (switching
  // a new file to WAL while another process opens it) come at once, without the busy handler.
  bool last_failure_busy() const { return last_busy_; }
  [[noreturn]] void fail_message(const std::string& what) const;

 private:
  std::string path_;
  std::chrono::milliseconds busy_timeout_;
  mutable bool last_busy_ = false;
  sqlite3* db_ = nullptr;
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  std::unordered_map<std::string, Cached> cache_;
};

// Shrinks the connection's page cache while one scan reads a table or index once, in order, and
// gives the default back after. Each page a cache holds is a fresh allocation, first touched when
// the scan fills it, and that first touch is a page fault (about 13 us on the VMs nodus runs on):
// the default 2 MiB cache costs ~500 of them for pages no one reads twice. Measured on a
// 100k-job store, the sqlite3 shell's scan of jobs_spend: 42 ms with 2 MiB, 28 ms with 256 KiB.
class ScanCache {
 public:
  explicit ScanCache(Db& db);
  ~ScanCache();
  ScanCache(const ScanCache&) = delete;
  ScanCache& operator=(const ScanCache&) = delete;

 private:
  Db& db_;
  int64_t before_;  // the connection's cache_size, given back by the destructor
};

// BEGIN ... COMMIT; the destructor rolls back a transaction that was not committed, so a failed
// write never leaves half a row. kImmediate takes the write lock up front: use it for every
// transaction that writes, above all read-then-write ones (a deferred reader that later writes
// fails with SQLITE_BUSY at once instead of waiting). Inside a transaction already open on the
// connection (Store::together) it is part of that one: it begins and commits nothing, and a
// failure inside it reaches the outer one as an exception, which rolls the whole back.
class Transaction {
 public:
  enum class Mode { kRead, kImmediate };
  Transaction(Db& db, Mode mode);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Db& db_;
  bool open_ = true;  // false once committed, and for one inside an outer transaction
};

}  // namespace nodus::store
