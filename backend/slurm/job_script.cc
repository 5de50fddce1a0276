#include "backend/slurm/job_script.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/deadlines.h"

namespace nodus::backend::slurm {

std::string slurm_job_name(const JobRecord& job, const SlurmSettings& settings) {
  auto created_ms = static_cast<int64_t>(std::llround(job.created_at * 1000));
  std::string tag = settings.store_tag.empty() ? "" : settings.store_tag + "-";
  return "nodus-" + tag + std::to_string(job.id) + "-" + std::to_string(created_ms);
}

std::string output_path(const SlurmSettings& settings, const JobRecord& job) {
  return settings.workdir + "/" + slurm_job_name(job, settings) + ".out";
}

std::string metrics_path(const SlurmSettings& settings, const JobRecord& job) {
  return settings.workdir + "/" + slurm_job_name(job, settings) + ".metrics.jsonl";
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

namespace {

int64_t millis(engine::Seconds s) { return static_cast<int64_t>(std::floor(s.count() * 1000)); }

// "12.345" for 12345 ms: timeout(1) takes fractional seconds.
std::string seconds_text(int64_t ms) {
  char out[32];
  std::snprintf(out, sizeof out, "%lld.%03lld", static_cast<long long>(ms / 1000),
                static_cast<long long>(ms % 1000));
  return out;
}

// The enforcer: `timeout` runs argv in its own process group and signals that whole group.
// Its origin is Slurm's start time of the job (whole seconds, what billing counts from), asked
// of squeue; the script's own start (which can only be later) when squeue cannot answer.
std::string enforcer(const engine::StopPlan& plan, const std::vector<std::string>& argv) {
  int64_t term_ms = millis(plan.term_after);
  int64_t kill_ms = millis(plan.kill_after);
  std::string s = "# The node's own stop, the plan nodus follows too: TERM " +
                  std::to_string(term_ms) + " ms and KILL " + std::to_string(kill_ms) +
                  " ms after Slurm started the job, even when nodus is gone.\n";
  s += R"(nodus_start=
[[ -n $SLURM_JOB_ID ]] && nodus_start=$(squeue -h -j "$SLURM_JOB_ID" -o %S 2>/dev/null)
if [[ $nodus_start == [0-9][0-9][0-9][0-9]-* ]]; then
  nodus_start=$(date -d "$nodus_start" +%s 2>/dev/null) || nodus_start=$(date +%s)
else
  nodus_start=$(date +%s)
fi
)";
  s += "nodus_left=$((nodus_start * 1000 + " + std::to_string(term_ms) + " - $(date +%s%3N)))\n";
  s += R"(((nodus_left > 0)) || nodus_left=1
nodus_left=$(printf '%d.%03d' $((nodus_left / 1000)) $((nodus_left % 1000)))
)";
  int64_t after = kill_ms - term_ms;
  std::string line = "exec timeout ";
  if (after < 1)
    line += "-s KILL";  // no grace: the deadline is the kill
  else
    line += "-s TERM -k " + seconds_text(after);
  line += " \"$nodus_left\"";
  for (const auto& arg : argv) line += " " + shell_quote(arg);
  return s + line + "\n";
}

}  // namespace

std::string job_script(const JobRecord& job, const std::string& workdir,
                       const std::string& output) {
  std::string s = "#!/bin/bash\n# nodus job " + std::to_string(job.id) + "\n";
  // Slurm creates the output with its daemon's umask (0644); the job's output is its user's.
  // Only a regular file: never a device or a link someone put in its place.
  s += "umask 077\n[[ -f " + shell_quote(output) + " && ! -L " + shell_quote(output) +
       " ]] && chmod 600 -- " + shell_quote(output) + "\n";
  // The metrics file lives in a folder open to all: created here as the job's user, never
  // through a link or into a file someone else made.
  s += R"(if [[ -n ${NODUS_METRICS-} ]]; then
  if [[ -L $NODUS_METRICS || ( -e $NODUS_METRICS && ! -O $NODUS_METRICS ) ]]; then
    echo "nodus: $NODUS_METRICS is not this job's own file: NODUS_METRICS is unset" >&2
    unset NODUS_METRICS
  else
    : >>"$NODUS_METRICS" && chmod 600 -- "$NODUS_METRICS"
  fi
fi
)";
  s += "cd -- " + shell_quote(workdir) +
       " || { echo \"nodus: cannot enter the working directory \"" + shell_quote(workdir) +
       " >&2; exit 126; }\n";
  if (auto plan = engine::plan_stop(job)) return s + enforcer(*plan, job.argv);
  return s + exec_line(job.argv) + "\n";
}

std::optional<int> time_limit_minutes(const JobRecord& job) {
  auto plan = engine::plan_stop(job);
  if (!plan) return std::nullopt;
  return std::max(1, static_cast<int>(std::ceil(plan->kill_after.count() / 60.0)));
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
  r.name = slurm_job_name(job, settings);
  r.time_limit_minutes = time_limit_minutes(job);
  r.working_dir = job.workdir;
  if (r.working_dir.empty()) {
    // As a local job inherits nodus's directory, so does a Slurm job (same host, or a shared
    // file system as Slurm sites have); the Slurm workdir only when there is none.
    char cwd[4096];
    r.working_dir = getcwd(cwd, sizeof cwd) != nullptr ? cwd : settings.workdir;
  }
  r.output_path = output_path(settings, job);
  r.script = job_script(job, r.working_dir, r.output_path);
  r.env = job_environment(spec, settings);
  if (r.env.count("NODUS_METRICS")) r.env["NODUS_METRICS"] = metrics_path(settings, job);
  r.gres = gres_request(job.gpu_type, job.gpu_count, settings);
  r.container = job.image;
  r.partition = settings.partition;
  return r;
}

}  // namespace nodus::backend::slurm
