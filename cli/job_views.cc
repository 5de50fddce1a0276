#include "cli/job_views.h"

#include <nlohmann/json.hpp>

#include "billing/catalog.h"
#include "billing/stop_plan.h"
#include "cli/common.h"
#include "core/cost.h"
#include "core/parse.h"
#include "core/table_fields.h"

namespace nodus::cli {

double wall_seconds(const JobRecord& job) {
  if (!job.started_at) return 0;
  return std::max(0.0, job.ended_at.value_or(unix_now()) - *job.started_at);
}

std::string gpu_label(const JobRecord& job) {
  if (job.gpu_count == 0) return "-";
  std::string s = std::to_string(job.gpu_count) + " x " + job.gpu_type;
  // A multi-node job's GPUs are every node's: say how they are spread.
  if (int nodes = nodes_of(job); nodes > 1)
    s += " (" + std::to_string(nodes) + " nodes x " + std::to_string(job.gpu_count / nodes) + ")";
  if (!job.gpu_indices.empty()) {
    s += " [";
    for (size_t i = 0; i < job.gpu_indices.size(); ++i)
      s += (i ? "," : "") + std::to_string(job.gpu_indices[i]);
    s += "]";
  }
  return s;
}

std::string duration_text(double seconds) {
  return format_duration(Millis(std::llround(std::max(0.0, seconds) * 1000)));
}

std::optional<StopMoments> stop_moments(const JobRecord& job) {
  auto plan = billing::plan_stop(job);
  if (!plan) return std::nullopt;
  StopMoments m;
  m.term_s = plan->term_after.count();
  m.kill_s = plan->kill_after.count();
  std::string grace = format_duration(Millis(job.grace_ms)) + " grace";
  if (plan->reason == JobState::kTimeout) {
    m.limit = "timeout " + duration_text(m.term_s) + ", then " + grace;
  } else {
    bool budget = plan->reason == JobState::kBudget;
    auto cap = budget ? budget_cap_of(job) : job.max_cost;
    double at = cap ? billing::cap_seconds(*cap, job.gpu_count, job.rate_per_gpu_hour) : m.kill_s;
    m.limit = std::string(budget ? "budget share " : "cap ") + (cap ? format_usd(*cap) : "") +
              " at " + duration_text(std::min(at, billing::kFarthestDeadline.count())) + ", " +
              grace;
  }
  return m;
}

std::string countdown_text(const JobRecord& job, double elapsed) {
  auto m = stop_moments(job);
  if (!m) return "";
  if (elapsed < m->term_s)
    return "SIGTERM in " + duration_text(m->term_s - elapsed) + " (" + m->limit + ")";
  if (elapsed < m->kill_s)
    return "SIGKILL in " + duration_text(m->kill_s - elapsed) + " (" + m->limit + ")";
  return "";
}

std::string stop_text(const JobRecord& job) {
  auto m = stop_moments(job);
  if (!m || !job.started_at) return "";
  bool planned = !is_final(job.state);
  bool stopped_by_it = job.state == JobState::kTimeout || job.state == JobState::kCostCap ||
                       job.state == JobState::kBudget;
  if (!planned && !stopped_by_it) return "";
  auto cost_at = [&](double s) {
    return format_usd(cost_usd(job.gpu_count, job.rate_per_gpu_hour, s));
  };
  auto moment = [&](const char* signal, double s, bool sent) {
    return std::string(signal) + (sent ? " at " : " due at ") + duration_text(s) +
           (job.rate_per_gpu_hour > 0 ? " (" + cost_at(s) + ")" : "");
  };
  if (planned)
    return moment("SIGTERM", m->term_s, false) + ", " + moment("SIGKILL", m->kill_s, false) + ": " +
           m->limit;
  double wall = wall_seconds(job);
  // The job may end between the two: SIGKILL was then not needed.
  bool killed = wall + 0.05 >= m->kill_s;
  std::string out = moment("SIGTERM", m->term_s, true) + ", ";
  if (m->kill_s <= m->term_s)
    out = moment("SIGKILL", m->kill_s, true);
  else
    out += killed ? moment("SIGKILL", m->kill_s, true)
                  : "SIGKILL was due at " + duration_text(m->kill_s) + ", not needed";
  return out + ": " + m->limit + "; it ended at " + duration_text(wall);
}

std::string end_of_job_line(const JobRecord& job) {
  const std::string id = std::to_string(job.id);
  std::string out = "job " + id + " " + std::string(to_string(job.state));
  if (job.state == JobState::kFailed && job.exit_code)
    out += " (exit " + std::to_string(*job.exit_code) + ")";
  out += " after " + duration_text(wall_seconds(job)) + ", cost " + format_usd(job.cost);
  // Of the note, what bears on the bill; the rest was said as it happened, or is plumbing.
  for (size_t at = 0; at < job.note.size();) {
    size_t end = job.note.find("; ", at);
    std::string part = job.note.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (part.rfind("billed ", 0) == 0 || part.find("past its cap") != std::string::npos)
      out += " (" + part + ")";
    at = end == std::string::npos ? job.note.size() : end + 2;
  }
  switch (job.state) {
    case JobState::kCompleted:
      return out + "; details: nodus show " + id;
    case JobState::kFailed:
    case JobState::kLost:
    case JobState::kTampered:
      return out + "; its output: nodus logs " + id;
    default:
      return out + "; when and why it stopped: nodus show " + id;
  }
}

static nlohmann::json stop_plan_json(const JobRecord& job) {
  auto m = stop_moments(job);
  if (!m) return nullptr;
  return {{"limit", m->limit}, {"term_s", m->term_s}, {"kill_s", m->kill_s}};
}

double live_cost(const JobRecord& job) {
  if (is_final(job.state) || !job.started_at || job.state == JobState::kWaiting) return job.cost;
  return cost_usd(job.gpu_count, job.rate_per_gpu_hour, wall_seconds(job));
}

double sweep_spent_now(store::Store& store, int64_t sweep_id, const std::vector<JobRecord>& cells) {
  double spent = store.sweep_spent(sweep_id);
  for (const JobRecord& job : cells)
    if (!is_final(job.state)) spent += live_cost(job) - job.cost;
  return spent;
}

nlohmann::json job_json(const JobRecord& job) {
  auto opt = [](const auto& o) -> nlohmann::json {
    return o ? nlohmann::json(*o) : nlohmann::json();
  };
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : job.env) env[k] = redact_env_value(k, v);
  return {
      {"schema_version", kSchemaVersion},
      {"id", job.id},
      {"name", or_null(job.name)},
      {"state", std::string(to_string(job.state))},
      {"backend", job.backend},
      {"backend_id", job.backend_id},
      {"command", job.argv},
      {"env", env},
      {"workdir", job.workdir},
      {"image", or_null(job.image)},
      {"gpu_type", or_null(job.gpu_type)},
      {"gpu_count", job.gpu_count},
      {"nodes", nodes_of(job)},
      {"gpu_indices", job.gpu_indices},
      {"inventory_source", or_null(job.inventory_source)},
      {"usd_per_gpu_hour", job.rate_per_gpu_hour},
      {"max_cost_usd", opt(job.max_cost)},
      {"timeout_s", job.timeout_ms ? nlohmann::json(*job.timeout_ms / 1000.0) : nlohmann::json()},
      {"grace_s", job.grace_ms / 1000.0},
      {"stop_plan", stop_plan_json(job)},
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
      {"sweep_id",
       job.sweep_id ? nlohmann::json("s" + std::to_string(*job.sweep_id)) : nlohmann::json()},
      // Numbered from 1, as in `show SWEEP` and the job's name.
      {"cell", job.sweep_id ? nlohmann::json(job.cell_index + 1) : nlohmann::json()},
      {"params", *job.params},
  };
}

nlohmann::json stats_json(const nlohmann::json& stored) {
  if (!stored.is_object()) return nlohmann::json::object();
  nlohmann::json out = stored;
  // The store keeps utilization in percent and CPU in percent of one core (what the sampler
  // reads); json speaks fractions 0-1 and cores (docs/output.md).
  for (const char* key : {"util_mean", "util_median", "util_stddev", "util_mean_job"})
    if (out.contains(key) && out[key].is_number()) out[key] = out[key].get<double>() / 100.0;
  for (auto [from, to] : {std::pair{"cpu_percent_mean", "cpu_cores_mean"},
                          std::pair{"max_process_cpu", "max_process_cores"}}) {
    if (!out.contains(from)) continue;
    if (out[from].is_number()) out[to] = out[from].get<double>() / 100.0;
    out.erase(from);
  }
  return out;
}

const std::vector<Field<JobRecord>>& job_fields() {
  using F = Field<JobRecord>;
  auto wall_text = [](const JobRecord& j) {
    return j.started_at ? format_duration(Millis(static_cast<long long>(wall_seconds(j) * 1000)))
                        : std::string("-");
  };
  static const std::vector<F> fields = {
      {{"id", "ID", true},
       [](auto& j) { return std::to_string(j.id); },
       [](auto& j) { return nlohmann::json(j.id); }},
      {{"name", "NAME"},
       [](auto& j) { return j.name.empty() ? "-" : j.name; },
       [](auto& j) { return or_null(j.name); }},
      {{"state", "STATE"},
       [](auto& j) { return std::string(to_string(j.state)); },
       [](auto& j) { return nlohmann::json(std::string(to_string(j.state))); }},
      {{"gpu", "GPU"},
       [](auto& j) { return gpu_label(j); },
       [](auto& j) { return j.gpu_count ? nlohmann::json(gpu_label(j)) : nlohmann::json(); }},
      {{"gpu_type", "GPU TYPE", false, Show::kMachine},
       nullptr,
       [](auto& j) { return or_null(j.gpu_type); }},
      {{"gpu_count", "GPUS", true, Show::kMachine},
       nullptr,
       [](auto& j) { return nlohmann::json(j.gpu_count); }},
      {{"created_at", "CREATED"},
       [](auto& j) { return ago(j.created_at); },
       [](auto& j) { return nlohmann::json(j.created_at); }},
      {{"started_at", "STARTED", false, Show::kMachine},
       nullptr,
       [](auto& j) { return or_null(j.started_at); }},
      {{"ended_at", "ENDED", false, Show::kMachine},
       nullptr,
       [](auto& j) { return or_null(j.ended_at); }},
      {{"wall_s", "WALL", true},
       wall_text,
       [](auto& j) { return nlohmann::json(wall_seconds(j)); }},
      {{"cost_usd", "COST", true},
       [](auto& j) { return format_usd(live_cost(j)); },
       [](auto& j) { return nlohmann::json(live_cost(j)); }},
      {{"max_cost_usd", "MAX COST", true, Show::kMachine},
       nullptr,
       [](auto& j) { return or_null(j.max_cost); }},
      {{"exit_code", "EXIT", true},
       [](auto& j) { return j.exit_code ? std::to_string(*j.exit_code) : "-"; },
       [](auto& j) { return or_null(j.exit_code); }},
      {{"sweep_id", "SWEEP"},
       // s3:2 is cell 2 of sweep 3 (`nodus logs s3:2`).
       [](auto& j) {
         return j.sweep_id
                    ? "s" + std::to_string(*j.sweep_id) + ":" + std::to_string(j.cell_index + 1)
                    : std::string("-");
       },
       [](auto& j) {
         return j.sweep_id ? nlohmann::json("s" + std::to_string(*j.sweep_id)) : nlohmann::json();
       }},
      {{"cell", "CELL", true, Show::kMachine},
       nullptr,
       [](auto& j) { return j.sweep_id ? nlohmann::json(j.cell_index + 1) : nlohmann::json(); }},
      {{"command", "COMMAND"},
       [](auto& j) {
         std::string cmd = command_line(j.argv);
         return cmd.size() > 48 ? cmd.substr(0, 45) + "..." : cmd;
       },
       [](auto& j) { return nlohmann::json(j.argv); }},
  };
  return fields;
}

}  // namespace nodus::cli
