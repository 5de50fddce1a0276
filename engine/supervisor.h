#pragma once
// Supervisor drives one job from launch to its recorded end, whatever the backend: it starts
// the job, enforces its timeout and cost cap on a monotonic clock, turns Ctrl-C and `nodus
// stop` into a stop, samples telemetry and metrics, bills it, and writes the final row.

#include <functional>
#include <map>
#include <string>

#include "backend/backend.h"
#include "core/job.h"
#include "engine/supervise_options.h"
#include "store/store.h"

namespace nodus::engine {

class SignalWatch;

struct SuperviseRun {
  SuperviseOptions options;
  bool attach = true;                      // output to the terminal too; notes on stderr
  std::map<std::string, std::string> env;  // the user's --env, unredacted
  SignalWatch* signals = nullptr;          // SIGINT -> cancelled; SIGTERM/SIGHUP -> stopped
  // A sweep's cell: the sweep's pid. Its death reaches the cell as a SIGTERM (the parent-death
  // signal); the job is stopped as by `nodus stop`, and its note says why.
  int64_t sweep_pid = 0;
  // Called once the job runs (or is queued, on Slurm). A failed launch throws Fatal instead.
  std::function<void(const JobRecord&, const std::string& error)> on_launched;
};

class Supervisor {
 public:
  Supervisor(store::Store& store, backend::Backend& backend) : store_(store), backend_(backend) {}

  // Runs a job whose row exists (state starting, GPUs claimed) to its end and returns the exit
  // status of an attached `nodus run`: the job's own code, 124 timeout, 122 cost cap, ...
  int run(JobRecord& job, const SuperviseRun& run);

 private:
  store::Store& store_;
  backend::Backend& backend_;
};

// The environment a job gets on top of nodus's own: the user's --env, NODUS_JOB_ID,
// NODUS_METRICS, CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES, PYTHONUNBUFFERED=1 (unless set).
std::map<std::string, std::string> job_environment(const JobRecord& job,
                                                   const std::map<std::string, std::string>& user);

}  // namespace nodus::engine
