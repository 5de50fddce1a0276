#pragma once
// Evidence that a job reads from storage, for the diagnosis: bytes read from block devices by
// the job's cgroup (io.stat rbytes: every process in it, also those that left the process
// tree; present only where the io controller is enabled for the cgroup) or else by its process
// tree (/proc/<pid>/io read_bytes: page-cache hits do not count in either), and the share of
// CPU time the machine spent waiting for I/O (/proc/stat iowait; machine-wide, so only a
// corroborating signal). "Reading from storage" is never diagnosed without one of them.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "telemetry/host_sampler.h"

namespace nodus::telemetry {

struct IoEvidence {
  uint64_t read_bytes = 0;             // by the tree since the tracker started
  double seconds = 0;                  // over this long
  std::optional<double> iowait_share;  // 0..1 of all CPU time, machine-wide
  bool readable = false;               // /proc/<pid>/io could be read at least once
  // The cgroup's io.stat, when it could be read at least once: preferred over the tree's.
  std::optional<uint64_t> cgroup_read_bytes;
  std::string cgroup_note;  // why io.stat was not used ("" when it was)

  std::optional<double> read_mib_per_s() const;
  std::string source() const;  // "cgroup io.stat" or "/proc/PID/io"
};

// The sum of rbytes= over the devices of a cgroup v2 io.stat text
// ("8:0 rbytes=4096 wbytes=0 rios=1 ..."); nullopt when no line has rbytes.
std::optional<uint64_t> parse_io_stat_rbytes(std::string_view io_stat_text);

// "read_bytes: N" of a /proc/<pid>/io text; nullopt when absent.
std::optional<uint64_t> parse_read_bytes(std::string_view io_text);
// iowait and total jiffies of the "cpu " line of /proc/stat.
std::optional<std::pair<uint64_t, uint64_t>> parse_cpu_iowait(std::string_view stat_text);

class IoTracker {
 public:
  // cgroup: the job's cgroup folder when known (TreeWalker).
  explicit IoTracker(pid_t main_pid, std::unique_ptr<ProcReader> reader = make_proc_reader(),
                     const std::string& cgroup = "");
  // The job's cgroup folder (cgroup v2): its io.stat is read at each sample besides the tree.
  void watch_cgroup(std::string dir);
  void sample();  // once per tick
  // Counts from the last sample on: called when the steady state begins, so that start-up
  // (Python importing torch from disk) is not taken for a loader reading its data.
  void rebase();
  IoEvidence evidence() const;

 private:
  std::unique_ptr<ProcReader> reader_;
  TreeWalker walker_;  // the job's processes, without reading every process on the host
  // (pid, starttime) -> read_bytes at first sight and now: a process seen first mid-run
  // contributes what it read after that, one present from the start all it read.
  std::map<std::pair<pid_t, uint64_t>, std::pair<uint64_t, uint64_t>> bytes_;
  std::optional<std::pair<uint64_t, uint64_t>> cpu_first_, cpu_last_;
  double first_t_ = 0, last_t_ = 0;
  bool readable_ = false;
  bool first_sample_ = true;
  std::string cgroup_dir_;
  std::optional<uint64_t> cg_first_, cg_last_;
  bool cg_tried_ = false;
};

}  // namespace nodus::telemetry
