#pragma once
// Reading /proc: the few facts about a process that the local backend needs to find, signal and
// kill a job's whole tree (parent, process group, session) and to see which files it holds.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace nodus::backend::local {

// Fields of /proc/<pid>/stat.
struct ProcStat {
  pid_t pid = 0;
  std::string comm;  // executable name as the kernel shows it, at most 15 characters
  char state = '?';  // R, S, D, Z, T, ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  bool zombie() const { return state == 'Z' || state == 'X'; }
};

// Parses the text of a /proc/<pid>/stat file; nullopt if it is malformed. The command name is
// in parentheses and may itself contain spaces and parentheses, so fields are counted from
// the last ')'.
std::optional<ProcStat> parse_proc_stat(const std::string& text);

// nullopt when the process does not exist (any more).
std::optional<ProcStat> read_proc_stat(pid_t pid);

// Every process visible in /proc, in no particular order.
std::vector<ProcStat> scan_processes();

// The value of `name` in the process's environment (/proc/<pid>/environ), nullopt when it is
// not set or not readable (another user, a zombie).
std::optional<std::string> read_proc_env(pid_t pid, const std::string& name);

// Targets of the process's open file descriptors (/proc/<pid>/fd/*); empty when unreadable.
std::vector<std::string> read_proc_fd_targets(pid_t pid);

// True when the process no longer exists or is a zombie (it runs nothing any more).
bool process_gone(pid_t pid);

}  // namespace nodus::backend::local
