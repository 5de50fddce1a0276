#pragma once
// Backend is where a job's processes actually run: this machine ("local") or a Slurm cluster
// ("slurm"). A backend only starts, watches, signals and kills; caps, billing, store updates and
// telemetry live once above it, in engine/Supervisor.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/result.h"

namespace nodus::backend {

using SteadyTime = std::chrono::steady_clock::time_point;

struct LaunchSpec {
  // Complete environment additions for the job: the user's --env (unredacted), NODUS_* and
  // CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES. Local jobs inherit the rest of nodus's env.
  std::map<std::string, std::string> env;
  std::string log_path;    // the job's stdout and stderr, interleaved, are appended here
  bool attach = true;      // also copy output to nodus's own stdout/stderr
  uint64_t log_limit = 0;  // bytes of log kept at most, head and tail (--log-limit); 0: all
  // Called with every complete output line (without the newline), for --metric-regex.
  std::function<void(std::string_view line)> on_line;
  // Called by the local backend once the job's containment is ready (its note names the cgroup)
  // and just before its first process starts: the supervisor records the job then, so that one
  // killed before it could record the start leaves a record that says what to kill.
  std::function<void(const JobRecord& job)> before_start;
};

struct Outcome {
  int exit_code = 0;          // the code `nodus run` returns for a job that ended by itself
  std::optional<int> signal;  // when the main process died of a signal (exit_code = 128 + sig)
  double started_at = 0;      // unix seconds, authoritative for billing
  double ended_at = 0;
  // The seconds to bill when that is not ended_at - started_at: a Slurm job requeued after it
  // started ran more than once, and each run held its GPUs (the time queued between does not).
  std::optional<double> billed_seconds;
  // The times are whole seconds (Slurm's record): the job ended somewhere in
  // [ended_at, ended_at + 1).
  bool whole_seconds = false;
  // The cluster's own record says the job completed (Slurm: COMPLETED, exit 0): what sacct says
  // stands, whatever stop nodus planned or sent as it ended.
  bool completed_by_record = false;
  // Set when the cluster's own limit ended the job, not one of nodus's (Slurm: TIMEOUT under a
  // time limit an administrator lowered after submit): what happened, for the record.
  std::string stopped_by_cluster;
  // Why the bill is not the cluster's own figure, when it is not (Slurm: a job killed while
  // suspended is billed to its kill, not to its suspension), for the record.
  std::string billing_note;
  // Set when the job died because one of nodus's enforcers was attacked (a stopped supervisor
  // whose sentinel then killed the job): what happened, for the record.
  std::string tampered;
};

struct Event {
  enum class Kind {
    kStarted,   // the job left the queue and runs (Slurm); started_at is set
    kExited,    // the job ended; outcome is set
    kDeadline,  // the deadline passed first
    kWoken,     // wake_fd became readable first
    kTampered,  // something killed or stopped one of nodus's own enforcers; `why` says what.
                // The backend has killed the job (or is killing it): kExited follows
    kQueued,    // the job waits in the cluster's queue (Slurm: PENDING, before it ran or after a
                // requeue); `why` is the scheduler's reason (Resources, JobHeldUser, ...). Sent
                // when the reason changes
  };
  Kind kind = Kind::kDeadline;
  double started_at = 0;
  Outcome outcome;
  std::string why;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Starts the job described by `job` (argv, workdir, image, gpu_indices) and sets
  // job.backend_id. When the job is running on return (local), job.started_at is set.
  // Errors carry exit code 127 (not found), 126 (cannot run) or 125.
  virtual Result<void> submit(JobRecord& job, const LaunchSpec& spec) = 0;

  // Blocks until the next event or `deadline`, whichever comes first; returns kWoken as soon
  // as wake_fd (-1: none) is readable. Streams output to the log meanwhile.
  virtual Result<Event> wait(JobRecord& job, SteadyTime deadline, int wake_fd) = 0;

  // Sends `sig` to every process of the job (a polite stop: SIGTERM; SIGKILL kills the tree
  // without waiting for it, cgroup.kill where the job has a cgroup).
  virtual Result<void> signal(JobRecord& job, int sig) = 0;

  // True when signal() may be called from another thread while one thread is in wait(): the
  // supervisor's watchdog thread then enforces the deadlines (engine/watchdog.h).
  virtual bool concurrent_signal_safe() const { return false; }

  // Kills whatever is left of the job and returns when nothing of it runs (local) or the
  // cluster has accepted the cancel (slurm). Safe to call on a job that already ended.
  virtual Result<void> kill(JobRecord& job) = 0;

  // Hands the job's absolute deadlines to an enforcer that does not depend on this process
  // (local: the sentinel, sentinel.h): SIGTERM at term_at, SIGKILL at kill_at, even if the
  // supervisor is killed, stopped or stuck. Backends whose cluster enforces a limit itself
  // (Slurm's time_limit) need nothing here.
  virtual Result<void> arm_deadline(JobRecord& job, SteadyTime term_at, SteadyTime kill_at) {
    return {};
  }

  // After the job ended and kill() returned: checks that nothing of the job still holds a GPU
  // (killing what does) and returns a one-line result for the job's record; nullopt when the
  // backend cannot tell.
  virtual std::optional<std::string> check_leftovers(JobRecord& job) { return std::nullopt; }

  // Where the job writes its NODUS_METRICS file and nodus reads it; the Python hook's folder
  // goes beside it (engine/measure.h). Local: the store's own (job.metrics_path); a cluster: a
  // folder every node of the job and nodus share.
  virtual std::string metrics_path(const JobRecord& job) { return job.metrics_path; }

  // Updates a job this process does not supervise (detached, or its supervisor died) from the
  // backend's own records. Returns true if the record changed.
  virtual Result<bool> refresh(JobRecord& job) { return false; }
};

// The registry: "local" or "slurm". Unknown names throw Fatal listing the known ones.
std::unique_ptr<Backend> make_backend(std::string_view name);
std::vector<std::string> backend_names();

}  // namespace nodus::backend
