#pragma once
// What Slurm's job records mean for nodus: which job_state is queued, running or final, the
// exit code behind a raw wait status, the Outcome of a finished job and the JobState that
// `nodus ps` shows for a job nobody supervised.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/slurm/api.h"
#include "core/job.h"

namespace nodus::backend::slurm {

enum class Phase {
  kQueued,   // PENDING, REQUEUED, CONFIGURING (nodes booting), ...
  kRunning,  // RUNNING, SUSPENDED, COMPLETING (ending; the final state is not known yet), ...
  kFinal,    // COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, ...
};
Phase phase_of(std::string_view job_state);

struct WaitStatus {
  int exit_code = 0;          // the exit status, or 128 + signal
  std::optional<int> signal;  // the terminating signal, if any
};
// Slurm reports the batch script's raw wait status: 768 -> exit 3, 15 -> SIGTERM (143).
WaitStatus decode_wait_status(int64_t raw);

// The Outcome of a job in a final phase. TIMEOUT (Slurm's own time limit stopped it) gives
// exit 124 as timeout(1) does; a failure state never gives 0. Times are Slurm's start_time and
// end_time: time spent queued is not billed, and a job cancelled while queued has zero length.
Outcome outcome_of(const SlurmJob& job);

// The final JobState for a finished job nobody supervised: TIMEOUT becomes kCostCap when the
// job's cost cap came before its timeout (Slurm's limit was the cap's), CANCELLED kStopped.
JobState final_state_of(const SlurmJob& slurm, const JobRecord& job);

// When Slurm's own time limit ended the job (TIMEOUT) before the TERM moment of nodus's plan
// (an administrator lowered the limit after submit: `scontrol update timelimit=` or endtime=),
// what happened, in a sentence for the job's note; else "". A TIMEOUT at or after that moment is
// the plan's (the limit nodus submitted is the plan's KILL, rounded up to a minute).
std::string stopped_by_time_limit(const SlurmJob& slurm, const JobRecord& job);

// One stretch of time a job held its resources: a run of it on a node.
struct RunSegment {
  double start = 0;
  double end = 0;
};

// Every run of a job, for billing: the runs in Slurm's accounting (`accounted`, one per start of a
// requeued job; empty when the cluster keeps no accounting) merged with `current`, the record
// slurmctld holds (fresher for the run in progress or just ended; null when Slurm forgot the
// job). A run still going ends at `now`. Runs that never started are left out; oldest first.
std::vector<RunSegment> run_segments(const std::vector<SlurmJob>& accounted,
                                     const SlurmJob* current, double now);
double total_seconds(const std::vector<RunSegment>& runs);

// A job killed while SUSPENDED: slurmctld records its end at its suspension (`last`, its final
// record, has end_time == suspend_time), yet the job kept its GPUs until its processes were
// killed (a suspend frees cores, not GRES), which accounting records as its last step's end.
// That end when it is later than slurmctld's by a second or more; nullopt otherwise, and while
// accounting has no step end for the run.
std::optional<double> end_held_while_suspended(const SlurmJob& last,
                                               const std::vector<SlurmJob>& accounted);

// The signal name slurmrestd accepts ("TERM" for SIGTERM), or nullopt.
std::optional<std::string> signal_name(int sig);

}  // namespace nodus::backend::slurm
