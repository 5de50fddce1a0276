// process_start_time / process_alive: is the supervisor that wrote a row still the same process?
// A pid alone is not enough (pids are reused), so rows keep the start time from /proc too.

#include <fstream>
#include <sstream>
#include <string>

#include "store/proc_stat.h"
#include "store/store.h"

namespace nodus::store {

std::optional<ProcStat> parse_proc_stat(std::string_view line) {
  // "pid (comm) state ppid ...": comm may hold spaces and ')' itself, so fields are counted
  // from the last ')'. After it come field 3 (state) ... field 22 (starttime).
  auto close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::istringstream in(std::string(line.substr(close + 1)));
  ProcStat st;
  std::string field;
  if (!(in >> st.state)) return std::nullopt;
  for (int n = 4; n < 22; ++n)
    if (!(in >> field)) return std::nullopt;
  if (!(in >> st.start_time)) return std::nullopt;
  return st;
}

static std::optional<ProcStat> read_proc_stat(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  return parse_proc_stat(line);
}

int64_t process_start_time(int64_t pid) {
  auto st = read_proc_stat(pid);
  return st ? st->start_time : 0;
}

bool process_alive(int64_t pid, int64_t start_time) {
  auto st = read_proc_stat(pid);
  // A zombie (Z) or dying (X) process holds nothing any more: its claims are free.
  return st && start_time != 0 && st->start_time == start_time && st->state != 'Z' &&
         st->state != 'X';
}

}  // namespace nodus::store
