#include "backend/slurm/job_script.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "billing/catalog.h"

namespace nodus::backend::slurm {

std::string slurm_job_name(const JobRecord& job) {
  auto created_ms = static_cast<int64_t>(std::llround(job.created_at * 1000));
  return "nodus-" + std::to_string(job.id) + "-" + std::to_string(created_ms);
}

std::string output_path(const SlurmSettings& settings, const JobRecord& job) {
  return settings.workdir + "/" + slurm_job_name(job) + ".out";
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string exec_line(const std::vector<std::string>& argv) {
  std::string line = "exec";
  for (const auto& arg : argv) line += " " + shell_quote(arg);
  return line;
}

std::string job_script(const JobRecord& job) {
  return "#!/bin/bash\n# nodus job " + std::to_string(job.id) + "\n" + exec_line(job.argv) + "\n";
}

std::optional<int> time_limit_minutes(const JobRecord& job) {
  double seconds = INFINITY;
  if (job.timeout_ms) seconds = static_cast<double>(*job.timeout_ms) / 1000.0;
  if (job.max_cost && job.gpu_count > 0)
    seconds = std::min(seconds,
                       billing::cap_seconds(*job.max_cost, job.gpu_count, job.rate_per_gpu_hour));
  if (!std::isfinite(seconds)) return std::nullopt;
  return std::max(1, static_cast<int>(std::ceil(seconds / 60.0)));
}

std::map<std::string, std::string> job_environment(const LaunchSpec& spec,
                                                   const SlurmSettings& settings) {
  std::map<std::string, std::string> env;
  const char* path = std::getenv("PATH");
  env["PATH"] = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (const auto& [name, value] : spec.env) env[name] = value;
  env.erase("SLURM_JWT");
  if (!settings.jwt.empty())
    for (auto it = env.begin(); it != env.end();)
      it = it->second.find(settings.jwt) != std::string::npos ? env.erase(it) : std::next(it);
  return env;
}

std::string gres_request(std::string_view gpu_type, int gpu_count, const SlurmSettings& settings) {
  if (gpu_count <= 0) return "";
  if (gpu_type.empty()) return "gpu:" + std::to_string(gpu_count);
  return "gpu:" + settings.gres_type(gpu_type) + ":" + std::to_string(gpu_count);
}

Result<SubmitRequest> build_submit(const JobRecord& job, const LaunchSpec& spec,
                                   const SlurmSettings& settings) {
  if (job.argv.empty()) return Error::permanent("nothing to run: the job's command is empty");
  SubmitRequest r;
  r.script = job_script(job);
  r.name = slurm_job_name(job);
  r.time_limit_minutes = time_limit_minutes(job);
  r.working_dir = job.workdir;
  if (r.working_dir.empty()) {
    // As a local job inherits nodus's directory, so does a Slurm job (same host, or a shared
    // file system as Slurm sites have); the Slurm workdir only when there is none.
    char cwd[4096];
    r.working_dir = getcwd(cwd, sizeof cwd) != nullptr ? cwd : settings.workdir;
  }
  r.output_path = output_path(settings, job);
  r.env = job_environment(spec, settings);
  r.gres = gres_request(job.gpu_type, job.gpu_count, settings);
  r.container = job.image;
  r.partition = settings.partition;
  return r;
}

}  // namespace nodus::backend::slurm
