#pragma once
// The one /proc reader: every part of nodus that asks the kernel about processes (the local
// backend's tree kill and sentinel, the host sampler, the GPU-holder check) reads through here.
// /proc/<pid>/stat's command name is in parentheses and may itself hold spaces and parentheses,
// so fields are counted from the last ')'.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nodus {

// Fields of /proc/<pid>/stat, numbered as in proc(5).
struct ProcStat {
  pid_t pid = 0;
  std::string comm;        // (2) executable name as the kernel shows it, at most 15 characters
  char state = '?';        // (3) R, S, D, Z, T, ...
  pid_t ppid = 0;          // (4)
  pid_t pgrp = 0;          // (5)
  pid_t session = 0;       // (6)
  uint64_t utime = 0;      // (14) clock ticks in user mode, all threads
  uint64_t stime = 0;      // (15) clock ticks in kernel mode, all threads
  uint64_t starttime = 0;  // (22) clock ticks after boot: with pid, identifies one process
  int64_t rss_pages = 0;   // (24)
  bool zombie() const { return state == 'Z' || state == 'X'; }
};

// The text of a /proc/<pid>/stat file -> its fields; nullopt when malformed or cut short.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

// A small kernel file whole (/proc, /sys/fs/cgroup: files whose size stat does not tell);
// nullopt when it cannot be opened.
std::optional<std::string> read_small_file(const std::string& path);

// A small /proc/<pid>/<name> file whole ("stat", "cmdline", "environ"); nullopt when it cannot
// be read (the process is gone, or belongs to another user).
std::optional<std::string> read_proc_file(pid_t pid, const char* name);

// nullopt when the process does not exist (any more).
std::optional<ProcStat> read_proc_stat(pid_t pid);

// Every pid visible in /proc now, in no particular order.
std::vector<pid_t> list_pids();

// Every process visible in /proc, in no particular order (one that exits meanwhile is left out).
std::vector<ProcStat> scan_processes();

// The one rule of what belongs to a process tree, for killing a job's tree
// (backend/local/process_tree.h) and for measuring it (telemetry/host_sampler.h) alike: the
// roots, every process in `session` or `pgrp` (0: not used; a child that left the group by
// setsid is still a descendant), and every descendant of those through parent links (a child
// may be listed before its parent). `never` (0: none) is never a member nor reached through:
// the caller itself, whose other children are not the tree's. Pure, unit-tested.
struct TreeSeeds {
  std::vector<pid_t> roots;
  pid_t session = 0;
  pid_t pgrp = 0;
  pid_t never = 0;
};
// One flag per entry of `procs`: whether it is a member.
std::vector<bool> tree_members(const std::vector<ProcStat>& procs, const TreeSeeds& seeds);

// The value of `name` in the process's environment (/proc/<pid>/environ), nullopt when it is
// not set or not readable (another user, a zombie).
std::optional<std::string> read_proc_env(pid_t pid, const std::string& name);

// Targets of the process's open file descriptors (/proc/<pid>/fd/*); empty when unreadable.
std::vector<std::string> read_proc_fd_targets(pid_t pid);

// True when the process no longer exists or is a zombie (it runs nothing any more).
bool process_gone(pid_t pid);

// True while the process is stopped (SIGSTOP, SIGTSTP, a tracer's stop: state T or t) or frozen
// (its cgroup v2 says "frozen 1" in cgroup.events: a job that moved nodus's processes into a
// cgroup of its own and wrote 1 to its cgroup.freeze). Either way it runs nothing until thawed.
bool process_stopped(pid_t pid);

// cgroup v2. The mount point of the cgroup2 file system from /proc/self/mountinfo's text
// (/sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a hybrid one), and the
// unified-hierarchy path from a /proc/<pid>/cgroup text ("0::/a/b" -> "/a/b"; nullopt when the
// line is missing or the cgroup was removed). Pure, unit-tested.
std::optional<std::string> cgroup2_mount(const std::string& mountinfo);
// Every cgroup file system in mountinfo's text, in its order: {fstype ("cgroup" for a v1
// hierarchy, "cgroup2"), mount point}. Pure.
struct CgroupMount {
  std::string type, mount_point;
};
std::vector<CgroupMount> cgroup_mounts(const std::string& mountinfo);
std::optional<std::string> unified_path(const std::string& proc_cgroup);

// The folder of pid's cgroup v2 (0: this process), e.g. /sys/fs/cgroup/unified/nodus/job-7.1;
// nullopt when there is no cgroup2 mount or the process is gone.
std::optional<std::string> process_cgroup_dir(pid_t pid);

}  // namespace nodus
