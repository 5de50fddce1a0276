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

// "nodus-<id>-<created_at in ms>": unique across nodus stores sharing a cluster, and derivable
// from the store row alone (reconcile after a crash between insert and submit).
std::string slurm_job_name(const JobRecord& job);
// Where the job's stdout and stderr go: <workdir>/<name>.out.
std::string output_path(const SlurmSettings& settings, const JobRecord& job);

// 'text' with single quotes, safe as one word for bash whatever it contains.
std::string shell_quote(std::string_view text);
// "exec 'arg0' 'arg1' ...": argv runs as the batch script's own process, so Slurm's exit code
// and signals are the program's; values stay data.
std::string exec_line(const std::vector<std::string>& argv);
std::string job_script(const JobRecord& job);

// Slurm's time limit, the safety net that holds when nodus is gone: min(timeout, the moment the
// cost reaches --max-cost), in whole minutes rounded up; nullopt when the job has neither.
std::optional<int> time_limit_minutes(const JobRecord& job);

// The job's complete environment: PATH (Slurm does not inherit it) and the launch env. The
// token is never part of it.
std::map<std::string, std::string> job_environment(const LaunchSpec& spec,
                                                   const SlurmSettings& settings);

// "gpu:h100:2" for 2 x H100-SXM, "gpu:2" for an untyped request, "" for none.
std::string gres_request(std::string_view gpu_type, int gpu_count, const SlurmSettings& settings);

// Everything above together; the working directory is the job's, else nodus's own. Errors: an
// empty argv.
Result<SubmitRequest> build_submit(const JobRecord& job, const LaunchSpec& spec,
                                   const SlurmSettings& settings);

}  // namespace nodus::backend::slurm
