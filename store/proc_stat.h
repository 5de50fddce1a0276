#pragma once
// Parsing of /proc/<pid>/stat, apart from the reading so tests can feed it awkward lines.

#include <cstdint>
#include <optional>
#include <string_view>

namespace nodus::store {

struct ProcStat {
  char state = '?';        // field 3: R, S, D, Z, X ...
  int64_t start_time = 0;  // field 22: clock ticks since boot
};

// nullopt when the line is not a stat line.
std::optional<ProcStat> parse_proc_stat(std::string_view line);

}  // namespace nodus::store
