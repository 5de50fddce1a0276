// process_start_time / process_alive: is the supervisor that wrote a row still the same process?
// A pid alone is not enough (pids are reused), so rows keep the start time from /proc too
// (read through core/proc.h, the one /proc parser).

#include <sys/types.h>

#include "core/proc.h"
#include "store/store.h"

namespace nodus::store {

namespace {
std::optional<ProcStat> stat_of(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  return read_proc_stat(static_cast<pid_t>(pid));
}
}  // namespace

int64_t process_start_time(int64_t pid) {
  auto st = stat_of(pid);
  return st ? static_cast<int64_t>(st->starttime) : 0;
}

bool process_alive(int64_t pid, int64_t start_time) {
  auto st = stat_of(pid);
  // A zombie (Z) or dying (X) process holds nothing any more: its claims are free.
  return st && start_time != 0 && static_cast<int64_t>(st->starttime) == start_time &&
         !st->zombie();
}

}  // namespace nodus::store
