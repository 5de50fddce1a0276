#pragma once
// /proc/<pid>/stat, parsed. Pure, so fixtures pin the format (comm may hold spaces and ')').

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace nodus::telemetry {

struct ProcStat {
  pid_t pid = 0;
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  uint64_t utime = 0;      // clock ticks in user mode, all threads
  uint64_t stime = 0;      // clock ticks in kernel mode, all threads
  uint64_t starttime = 0;  // clock ticks after boot: with pid, identifies one process
  int64_t rss_pages = 0;
};

// The text of /proc/<pid>/stat -> its fields; nullopt when malformed.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

}  // namespace nodus::telemetry
