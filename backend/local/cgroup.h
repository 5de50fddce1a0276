#pragma once
// One cgroup v2 per local job: the containment a job cannot leave. A process's cgroup is kept
// across fork, setsid, double forks, an emptied environment and re-exec, and only a process
// allowed to write a cgroup's cgroup.procs can move out of it; `cgroup.kill` (Linux >= 5.14)
// SIGKILLs every member in one step, so a job that forks while it is being killed cannot win
// the race a /proc scan loses. This is what Slurm's proctrack/cgroup and systemd's scope units
// do for their jobs and services.
//
// Where: the cgroup2 mount (/sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a
// hybrid one), under this process's own cgroup (the `0::/path` line of /proc/self/cgroup, which
// on a delegated subtree is the part we may write), else under the mount's root; in a folder
// `nodus` there, one child per job. Usable only when mkdir works there and cgroup.kill exists;
// otherwise local jobs keep the process group / session / subreaper / tree-token mechanism
// (process_tree.h). NODUS_CGROUP=off forces that fallback (config key `cgroup`).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/proc.h"
#include "core/result.h"

namespace nodus::backend::local {

// The folder jobs' cgroups are made in, found (and created) once per process; nullopt with the
// reason in *why when none is usable or NODUS_CGROUP=off.
std::optional<std::string> cgroup_parent(std::string* why = nullptr);

// The pure parsers of /proc/self/mountinfo and /proc/self/cgroup live in core/proc.h (the host
// sampler reads a job's cgroup too).
using nodus::cgroup2_mount;
using nodus::unified_path;

struct CgroupUsage {
  std::optional<double> cpu_seconds;    // cpu.stat usage_usec
  std::optional<uint64_t> memory_peak;  // memory.peak, where the memory controller is on
};

// A job's cgroup. Movable, not copyable; the destructor closes descriptors but leaves the
// cgroup (remove() does that once it is empty).
class JobCgroup {
 public:
  // mkdir <parent>/<name>; the descriptor for cgroup.procs is opened now, so the child can
  // join with one write between fork and exec.
  static Result<JobCgroup> create(const std::string& parent, const std::string& name);
  JobCgroup() = default;
  JobCgroup(JobCgroup&& o) noexcept;
  JobCgroup& operator=(JobCgroup&& o) noexcept;
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;
  ~JobCgroup();

  bool valid() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // O_WRONLY on cgroup.procs: writing "0" moves the writer in (async-signal-safe).
  int procs_fd() const { return procs_fd_; }

  std::vector<pid_t> members() const;  // cgroup.procs now
  bool populated() const;              // cgroup.events "populated 1"; true when unreadable
  // Sends sig to every member (a polite stop); returns how many were signalled.
  int signal(int sig) const;
  // cgroup.kill, then waits (poll on cgroup.events) until the cgroup is empty. Writing
  // cgroup.kill again each round costs nothing and covers a failed write. An error names the
  // members still there after `limit` (a process stuck in the kernel, state D).
  Result<void> kill(std::chrono::milliseconds limit) const;
  CgroupUsage usage() const;
  // Confines the cgroup to these CPUs (cpuset.cpus, "0-3,8"), before any process joins: the
  // job cannot widen it, unlike its affinity. Enables the cpuset controller in the parent's
  // cgroup.subtree_control where the parent has it; an error says why not (the caller then
  // relies on sched_setaffinity alone).
  Result<void> restrict_cpus(const std::string& cpu_list) const;
  // rmdir once empty; a no-op when already removed.
  Result<void> remove();

 private:
  std::string path_;
  int procs_fd_ = -1;
};

// A local job's record names its cgroup in its note, "contained by cgroup PATH" (local_backend):
// what `ps` kills should the job's supervisor and sentinel both die (engine/reconcile.h).
inline constexpr const char* kContainedByCgroup = "contained by cgroup ";
std::string cgroup_from_note(const std::string& note);  // "" when it names none

// The same operations on a cgroup known only by its path (the sentinel, after fork).
// Async-signal-unsafe calls are fine there: it is single-threaded.
bool cgroup_kill_path(const std::string& path);
bool cgroup_populated_path(const std::string& path);
bool cgroup_wait_empty_path(const std::string& path, std::chrono::milliseconds limit);
// `path` and the cgroup folders below it, deepest first (`path` last).
std::vector<std::string> cgroup_and_below(const std::string& path);
// Removes the cgroup and the (empty) cgroups below it, deepest first: 0, or the errno of the
// cgroup's own rmdir.
int cgroup_remove_path(const std::string& path);
// Signals every process of the cgroup and of the cgroups below it; how many it reached.
int cgroup_signal_path(const std::string& path, int sig);

}  // namespace nodus::backend::local
