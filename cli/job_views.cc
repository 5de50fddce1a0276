#include "cli/job_views.h"

#include "cli/common.h"
#include "core/cost.h"
#include "core/parse.h"

namespace nodus::cli {

double wall_seconds(const JobRecord& job) {
  if (!job.started_at) return 0;
  return std::max(0.0, job.ended_at.value_or(unix_now()) - *job.started_at);
}

std::string gpu_label(const JobRecord& job) {
  if (job.gpu_count == 0) return "-";
  std::string s = std::to_string(job.gpu_count) + " x " + job.gpu_type;
  if (!job.gpu_indices.empty()) {
    s += " [";
    for (size_t i = 0; i < job.gpu_indices.size(); ++i)
      s += (i ? "," : "") + std::to_string(job.gpu_indices[i]);
    s += "]";
  }
  return s;
}

static double live_cost(const JobRecord& job) {
  if (is_final(job.state) || !job.started_at) return job.cost;
  return cost_usd(job.gpu_count, job.rate_per_gpu_hour, wall_seconds(job));
}

nlohmann::json job_json(const JobRecord& job) {
  auto opt = [](const auto& o) -> nlohmann::json {
    return o ? nlohmann::json(*o) : nlohmann::json();
  };
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : job.env) env[k] = redact_env_value(k, v);
  return {
      {"id", job.id},
      {"name", job.name},
      {"state", std::string(to_string(job.state))},
      {"backend", job.backend},
      {"backend_id", job.backend_id},
      {"command", job.argv},
      {"env", env},
      {"workdir", job.workdir},
      {"image", job.image},
      {"gpu_type", job.gpu_type},
      {"gpu_count", job.gpu_count},
      {"gpu_indices", job.gpu_indices},
      {"inventory_source", job.inventory_source},
      {"usd_per_gpu_hour", job.rate_per_gpu_hour},
      {"max_cost_usd", opt(job.max_cost)},
      {"timeout_s", job.timeout_ms ? nlohmann::json(*job.timeout_ms / 1000.0) : nlohmann::json()},
      {"grace_s", job.grace_ms / 1000.0},
      {"exit_code", opt(job.exit_code)},
      {"signal", opt(job.signal)},
      {"created_at", job.created_at},
      {"started_at", opt(job.started_at)},
      {"ended_at", opt(job.ended_at)},
      {"wall_s", wall_seconds(job)},
      {"gpu_seconds", job.gpu_seconds()},
      {"cost_usd", live_cost(job)},
      {"log_path", job.log_path},
      {"note", job.note},
      {"sweep_id", opt(job.sweep_id)},
      {"cell_index", job.sweep_id ? nlohmann::json(job.cell_index) : nlohmann::json()},
      {"params", job.params},
  };
}

Table jobs_table(const std::vector<JobRecord>& jobs) {
  Table t({{"id", "ID", true},
           {"name", "NAME"},
           {"state", "STATE"},
           {"gpu", "GPU"},
           {"created_at", "CREATED"},
           {"wall_s", "WALL", true},
           {"cost_usd", "COST", true},
           {"exit_code", "EXIT", true},
           {"sweep", "SWEEP"},
           {"command", "COMMAND"}});
  for (const auto& job : jobs) {
    std::string cmd = command_line(job.argv);
    if (cmd.size() > 48) cmd = cmd.substr(0, 45) + "...";
    auto j = job_json(job);
    nlohmann::json raw = {
        {"id", job.id},
        {"name", job.name},
        {"state", j["state"]},
        {"gpu", gpu_label(job)},
        {"created_at", job.created_at},
        {"wall_s", j["wall_s"]},
        {"cost_usd", j["cost_usd"]},
        {"exit_code", j["exit_code"]},
        {"sweep",
         job.sweep_id ? nlohmann::json("s" + std::to_string(*job.sweep_id)) : nlohmann::json()},
        {"cell", job.sweep_id ? nlohmann::json(job.cell_index + 1) : nlohmann::json()},
        {"command", command_line(job.argv)}};
    // s3:2 is cell 2 of sweep 3 (`nodus logs s3:2`).
    std::string sweep_cell = job.sweep_id ? "s" + std::to_string(*job.sweep_id) + ":" +
                                                std::to_string(job.cell_index + 1)
                                          : "-";
    t.add_row(
        {std::to_string(job.id), job.name.empty() ? "-" : job.name, j["state"].get<std::string>(),
         gpu_label(job), ago(job.created_at),
         job.started_at ? format_duration(Millis(static_cast<long long>(wall_seconds(job) * 1000)))
                        : "-",
         format_usd(j["cost_usd"].get<double>()),
         job.exit_code ? std::to_string(*job.exit_code) : "-", sweep_cell, cmd},
        raw);
  }
  return t;
}

}  // namespace nodus::cli
