#pragma once
// How a nodus job becomes a Slurm batch submission: its name, script, environment, GPU request
// and time limit. Pure functions of the job record, so a retry or a later reconcile derives the
// same name and paths.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/slurm/api.h"
#include "backend/slurm/settings.h"
#include "core/job.h"
#include "core/result.h"

namespace nodus::backend::slurm {

// "nodus-<store tag>-<id>-<created_at in ms>": unique across nodus stores sharing a cluster (the
// tag is random per store; ids alone repeat in every store), and derivable from the store row
// and the store's tag alone (reconcile after a crash between insert and submit).
std::string slurm_job_name(const JobRecord& job, const SlurmSettings& settings);
// Where the job's stdout and stderr go: <workdir>/<name>.out.
std::string output_path(const SlurmSettings& settings, const JobRecord& job);
// The job's NODUS_METRICS file on Slurm: <workdir>/<name>.metrics.jsonl, beside its output, in
// the folder the job's user can write (nodus's own store is private to the submitter, so a job
// running as another user could not write there), made 0600 by the job script.
std::string metrics_path(const SlurmSettings& settings, const JobRecord& job);

// 'text' with single quotes, safe as one word for bash whatever it contains.
std::string shell_quote(std::string_view text);
// "exec 'arg0' 'arg1' ...": argv runs as the batch script's own process, so Slurm's exit code
// and signals are the program's; values stay data.
std::string exec_line(const std::vector<std::string>& argv);

// The batch script: makes its output and its NODUS_METRICS file private (0600; a metrics path
// that is a link or someone else's file is not used: NODUS_METRICS is unset, with a line saying
// so), enters `workdir` (exit 126 with a line
// saying so when it cannot: Slurm itself would run the job in /tmp), then runs argv.
// When the job has a stop plan (billing/stop_plan.h: --timeout, --max-cost, its sweep's budget
// share) argv runs under the node's own enforcer: TERM at the plan's term_after and KILL at
// kill_after, both counted from Slurm's start time of the job (when billing starts), whatever
// happens to nodus, slurmrestd or the network. The enforcer is out of the job's reach and takes
// nothing from it (docs/slurm.md "The node's enforcer"): coreutils `timeout` by absolute path,
// outside a PID namespace of the job's own; tools run with an environment of their own; the
// clock is slurmctld's; a run after a requeue ends at once (CANCELLED), as the plan's clock is
// the first run's. Exit codes and signals stay the program's, except 124 (TERM at the deadline
// ended it) or death by SIGKILL (the deadline's KILL); a program that exits 128 + N is recorded
// as killed by signal N.
// With `hook` (the job's environment has NODUS_HOOK_DIR, engine/measure.h), the script first
// makes that folder as the job's user (never one that exists: the workdir is open to all) and
// writes nodus's Python hook into it; where it cannot, the job runs without the hook, saying so
// on its output, and with the folder taken off its PYTHONPATH.
std::string job_script(const JobRecord& job, const std::string& workdir, const std::string& output,
                       bool hook = false);

// Slurm's time limit, the last net behind the node's enforcer: the plan's kill_after in whole
// minutes rounded up (never 0, which Slurm reads as "no limit"); nullopt only for a job that
// nothing bounds: no timeout, no cost cap, no budget share.
std::optional<int> time_limit_minutes(const JobRecord& job);

// The warning for a job that nothing bounds, shown at submit.
inline constexpr std::string_view kUnboundedWarning =
    "this job has no --timeout, --max-cost or budget: on Slurm this job outlives nodus, as sbatch "
    "jobs do (only `nodus stop` or scancel ends it)";

// The job's complete environment: PATH (Slurm does not inherit it) and the launch env. The
// token is never part of it.
std::map<std::string, std::string> job_environment(const LaunchSpec& spec,
                                                   const SlurmSettings& settings);

// "gpu:h100:2" for 2 x H100-SXM, "gpu:2" for an untyped request, "" for none.
std::string gres_request(std::string_view gpu_type, int gpu_count, const SlurmSettings& settings);

// Everything above together; the working directory is the job's, else nodus's own; a launch
// with NODUS_METRICS gets metrics_path() instead. Errors: an empty argv.
Result<SubmitRequest> build_submit(const JobRecord& job, const LaunchSpec& spec,
                                   const SlurmSettings& settings);

}  // namespace nodus::backend::slurm
