#pragma once
// HostSampler measures the CPU use of a job's whole process tree (the main process, its
// descendants, and every process in its session or process group, so DataLoader workers and
// re-parented orphans count) as a delta between calls.
//
// It reads only the job's own processes, never every process on the host, so its cost follows
// the job and not the host (a GPU server often runs thousands of processes): TreeWalker takes the
// members of the job's cgroup (cgroup.procs, backend/local/cgroup.h gives every local job one)
// when the job has a cgroup of its own, else it walks the tree from the main process through
// /proc/PID/task/*/children, plus the orphans this process (a child subreaper) adopted that are
// still in the job's session or process group.

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/proc.h"
#include "core/samples.h"

namespace nodus::telemetry {

// What the sampler reads of the system, behind an interface so tests can feed it snapshots.
class ProcReader {
 public:
  virtual ~ProcReader();
  virtual std::vector<pid_t> pids() = 0;  // every process visible now
  // The children of every thread of pid (/proc/pid/task/*/children). The default derives them
  // from pids() and stat(), for readers that only list processes.
  virtual std::vector<pid_t> children(pid_t pid);
  // The folder of pid's cgroup v2 (0: this process); nullopt when unknown (the default).
  virtual std::optional<std::string> cgroup_dir(pid_t pid);
  // The processes of the cgroup at dir and of the cgroups below it; nullopt when unreadable.
  virtual std::optional<std::vector<pid_t>> cgroup_procs(const std::string& dir);
  virtual pid_t self_pid();
  virtual std::optional<std::string> stat(pid_t pid) = 0;  // /proc/<pid>/stat, nullopt if gone
  virtual int cores(pid_t pid) = 0;                        // CPUs pid may run on; 0: unknown
  virtual pid_t self_session() = 0;                        // the sampler's own session
  virtual pid_t self_pgrp() = 0;                           // and process group
  virtual double ticks_per_second() = 0;                   // sysconf(_SC_CLK_TCK)
  virtual double page_size() = 0;                          // bytes
};

// The real /proc reader.
std::unique_ptr<ProcReader> make_proc_reader();

// Where the job's tree is found. session/pgrp are 0 when not used: when the job shares them
// with nodus itself (no setsid/setpgid), matching them would count nodus and its terminal.
struct TreeRoot {
  pid_t main_pid = 0;
  pid_t session = 0;
  pid_t pgrp = 0;
};

// The processes of the tree among `all`: main_pid, its descendants by PPid, and members of
// the root's session or process group.
std::vector<ProcStat> select_tree(const std::vector<ProcStat>& all, const TreeRoot& root);

// The members of one job's tree, read the way the header comment says.
class TreeWalker {
 public:
  // Resolves the root (session and group, when not nodus's own) and the job's cgroup: `cgroup`
  // when given and its cgroup.procs can be read (a container's processes are in the job's
  // cgroup while the engine's client, the main process, is not), else main_pid's when it is
  // not this process's own and can be read.
  TreeWalker(pid_t main_pid, ProcReader& reader, const std::string& cgroup = "");
  // The members now, with their /proc/PID/stat (zombies included).
  std::vector<ProcStat> members();
  const TreeRoot& root() const { return root_; }
  const std::string& cgroup() const { return cgroup_; }  // "": walking /proc children

 private:
  std::optional<ProcStat> read(pid_t pid);
  ProcReader& reader_;
  TreeRoot root_;
  std::string cgroup_;
};

class HostSampler {
 public:
  // Reads the main process and takes the baseline: CPU time used before now is not counted.
  // t_mono: the steady clock in seconds (default: now), for tests that drive the clock.
  // cgroup: the job's cgroup folder when known (TreeWalker).
  explicit HostSampler(pid_t main_pid, std::unique_ptr<ProcReader> reader = make_proc_reader(),
                       std::optional<double> t_mono = std::nullopt, const std::string& cgroup = "");

  // CPU use since the previous call (or construction), at unix time now and the steady clock.
  HostSample sample();
  // The same with the clocks given (seconds): t_unix is the sample's t, t_mono measures the
  // interval.
  HostSample sample_at(double t_unix, double t_mono);

  const TreeRoot& root() const { return walker_.root(); }
  const std::string& cgroup() const { return walker_.cgroup(); }

 private:
  HostSample measure(double t_unix, double t_mono);

  std::unique_ptr<ProcReader> reader_;
  TreeWalker walker_;
  // CPU ticks per process at the previous call, keyed by (pid, starttime) so that a reused pid
  // is a new process.
  std::map<std::pair<pid_t, uint64_t>, uint64_t> ticks_;
  double last_mono_ = 0;
  double total_delta_ = 0;  // ticks, at the last measure()
  double max_delta_ = 0;
};

}  // namespace nodus::telemetry
