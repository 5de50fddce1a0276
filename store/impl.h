#pragma once
// Store::Impl, shared by the store's .cc files (one per table group): the connection and the
// mutex that serializes callers, since one SQLite connection and its statement cache must be
// used by one thread at a time.

#include <mutex>

#include "store/sqlite.h"
#include "store/store.h"

namespace nodus::store {

struct Store::Impl {
  Impl(const std::string& path, std::chrono::milliseconds busy_timeout, bool read_only = false)
      : db(path, busy_timeout, read_only) {}
  Db db;
  std::recursive_mutex mu;

  std::unique_lock<std::recursive_mutex> lock() { return std::unique_lock(mu); }
};

}  // namespace nodus::store
