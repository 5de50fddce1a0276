// slurmrestd's API v0.0.38 (Slurm 22.05, the version Debian 12 ships).
//
// Facts this mapping relies on, measured against slurmrestd 22.05.8:
// - submit: `environment` must be a non-empty object (the job gets nothing else but SLURM_*);
//   unknown keys are rejected; `time_limit` is in minutes; GPUs go in `gres` ("gpu:h100:2").
// - errors come as {"error", "error_code"} on submit and {"error", "error_number",
//   "description"} elsewhere.
// - job records carry times as unix seconds and `exit_code` as the raw wait status.
// - accounting (the openapi/dbv0.0.38 plugin, only when slurmctld has slurmdbd): /slurmdb/v0.0.38/
//   job/{id} lists every run of the job, a requeued one's earlier runs included (state
//   REQUEUED), with times nested in "time" {start, end} (null or 0 when unset), the state in
//   "state" {current} and exit codes as {status: SUCCESS|FAILED|SIGNALED, return_code, signal
//   {signal_id}}; an unknown id is HTTP 200 with error 9003 "Nothing found" and no jobs.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "backend/slurm/api.h"
#include "core/json_input.h"

namespace nodus::backend::slurm {
namespace {

using nlohmann::json;

double number_or_zero(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

std::string string_or_empty(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<json> parse_object(std::string_view body, std::string_view what) {
  if (json_too_deep_at(body))
    return Error::permanent("slurmrestd answered " + std::string(what) + " with JSON " +
                            json_depth_words());
  json j = parse_untrusted_json(body);
  if (!j.is_object())
    return Error::permanent("slurmrestd answered " + std::string(what) +
                            " with something that is not a JSON object");
  return j;
}

class ApiV0038 : public SlurmApi {
 public:
  std::string_view version() const override { return "v0.0.38"; }
  std::string ping_path() const override { return prefix() + "/ping"; }
  std::string submit_path() const override { return prefix() + "/job/submit"; }
  std::string jobs_path() const override { return prefix() + "/jobs"; }
  std::string job_path(int64_t job_id) const override {
    return prefix() + "/job/" + std::to_string(job_id);
  }
  std::string cancel_path(std::string_view job_ref, std::string_view signal) const override {
    std::string path = prefix() + "/job/" + std::string(job_ref);
    if (!signal.empty()) path += "?signal=" + std::string(signal);
    return path;
  }
  std::string accounting_path(int64_t job_id) const override {
    return "/slurmdb/v0.0.38/job/" + std::to_string(job_id);
  }

  std::string submit_body(const SubmitRequest& r) const override {
    json job = {
        {"name", r.name},
        {"current_working_directory", r.working_dir},
        {"standard_output", r.output_path},
        // Every run of a requeued job adds to its output, as a follower of it expects: with
        // Slurm's default (truncate) a second run overwrites the first, and one no longer than
        // it goes unseen.
        {"open_mode", "append"},
        {"environment", json(r.env)},
    };
    if (r.time_limit_minutes) job["time_limit"] = *r.time_limit_minutes;
    if (!r.gres.empty()) job["gres"] = r.gres;
    if (!r.container.empty()) job["container"] = r.container;
    if (!r.partition.empty()) job["partition"] = r.partition;
    if (!r.array.empty()) job["array"] = r.array;
    if (r.nodes > 1) {
      // Measured: `"nodes": 2, "tasks_per_node": 1` gives SLURM_NNODES=2, SLURM_NTASKS=2 (a
      // "minimum_nodes"/"maximum_nodes" pair is refused as an unknown key).
      job["nodes"] = r.nodes;
      job["tasks_per_node"] = 1;
    }
    return json{{"script", r.script}, {"job", job}}.dump();
  }

  Result<int64_t> parse_submit(std::string_view body) const override {
    auto j = parse_object(body, "the submit");
    if (!j) return j.error();
    auto id = j->find("job_id");
    if (id == j->end() || !id->is_number_integer()) {
      auto errs = errors(body);
      return Error::permanent(errs.empty() ? "slurmrestd's submit answer has no job_id"
                                           : "Slurm rejected the job: " + to_string(errs));
    }
    return id->get<int64_t>();
  }

  Result<std::vector<SlurmJob>> parse_jobs(std::string_view body) const override {
    auto j = parse_object(body, "a job query");
    if (!j) return j.error();
    auto list = j->find("jobs");
    if (list == j->end() || !list->is_array())
      return Error::permanent("slurmrestd's job answer has no jobs list");
    std::vector<SlurmJob> jobs;
    for (const json& r : *list) {
      if (!r.is_object()) continue;
      SlurmJob s;
      s.job_id = static_cast<int64_t>(number_or_zero(r, "job_id"));
      s.name = string_or_empty(r, "name");
      s.user_name = string_or_empty(r, "user_name");
      s.state = string_or_empty(r, "job_state");
      s.state_reason = string_or_empty(r, "state_reason");
      s.submit_time = number_or_zero(r, "submit_time");
      s.start_time = number_or_zero(r, "start_time");
      s.end_time = number_or_zero(r, "end_time");
      s.suspend_time = number_or_zero(r, "suspend_time");
      s.exit_code = static_cast<int64_t>(number_or_zero(r, "exit_code"));
      s.time_limit_minutes = static_cast<int64_t>(number_or_zero(r, "time_limit"));
      s.array_job_id = static_cast<int64_t>(number_or_zero(r, "array_job_id"));
      if (auto t = r.find("array_task_id"); t != r.end() && t->is_number_integer())
        s.array_task_id = t->get<int>();
      s.array_task_string = string_or_empty(r, "array_task_string");
      s.standard_output = string_or_empty(r, "standard_output");
      jobs.push_back(std::move(s));
    }
    return jobs;
  }

  Result<std::vector<SlurmJob>> parse_accounting(std::string_view body) const override {
    auto j = parse_object(body, "an accounting query");
    if (!j) return j.error();
    auto list = j->find("jobs");
    if (list == j->end() || !list->is_array())
      return Error::permanent("slurmrestd's accounting answer has no jobs list");
    std::vector<SlurmJob> runs;
    for (const json& r : *list) {
      if (!r.is_object()) continue;
      SlurmJob s;
      s.job_id = static_cast<int64_t>(number_or_zero(r, "job_id"));
      s.name = string_or_empty(r, "name");
      s.user_name = string_or_empty(r, "user");
      if (auto state = r.find("state"); state != r.end() && state->is_object())
        s.state = string_or_empty(*state, "current");
      if (auto t = r.find("time"); t != r.end() && t->is_object()) {
        s.submit_time = number_or_zero(*t, "submission");
        s.start_time = number_or_zero(*t, "start");
        s.end_time = number_or_zero(*t, "end");
        s.time_limit_minutes = static_cast<int64_t>(number_or_zero(*t, "limit"));
      }
      if (auto steps = r.find("steps"); steps != r.end() && steps->is_array()) {
        for (const json& step : *steps) {
          if (!step.is_object()) continue;
          if (auto t = step.find("time"); t != step.end() && t->is_object())
            s.last_step_end = std::max(s.last_step_end, number_or_zero(*t, "end"));
        }
      }
      if (auto e = r.find("exit_code"); e != r.end() && e->is_object()) {
        if (string_or_empty(*e, "status") == "SIGNALED") {
          if (auto sig = e->find("signal"); sig != e->end() && sig->is_object())
            s.exit_code = static_cast<int64_t>(number_or_zero(*sig, "signal_id")) & 0x7f;
        } else {
          s.exit_code = (static_cast<int64_t>(number_or_zero(*e, "return_code")) & 0xff) << 8;
        }
      }
      runs.push_back(std::move(s));
    }
    return runs;
  }

  std::vector<SlurmError> errors(std::string_view body) const override {
    std::vector<SlurmError> out;
    json j = parse_untrusted_json(body);
    if (!j.is_object()) return out;
    auto list = j.find("errors");
    if (list == j.end() || !list->is_array()) return out;
    for (const json& e : *list) {
      if (!e.is_object()) continue;
      SlurmError err;
      err.code = static_cast<int64_t>(number_or_zero(e, "error_code"));
      if (err.code == 0) err.code = static_cast<int64_t>(number_or_zero(e, "error_number"));
      err.text = string_or_empty(e, "error");
      err.description = string_or_empty(e, "description");
      if (!err.text.empty() || !err.description.empty()) out.push_back(std::move(err));
    }
    return out;
  }

 private:
  static std::string prefix() { return "/slurm/v0.0.38"; }
};

}  // namespace

std::string to_string(const std::vector<SlurmError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "; ";
    std::string words = e.text;
    // Slurm's generic words say little; its description says what happened.
    if (words.empty() || words == "Unspecified error")
      words = e.description;
    else if (!e.description.empty() && e.description != words)
      words += ": " + e.description;
    out += words;
    if (e.code > 0) out += " (" + std::to_string(e.code) + ")";
  }
  return out;
}

Result<std::unique_ptr<SlurmApi>> make_api(std::string_view version) {
  if (version == "v0.0.38") return std::unique_ptr<SlurmApi>(std::make_unique<ApiV0038>());
  return Error::permanent("NODUS_SLURM_API: unsupported version '" + std::string(version) +
                          "': expected v0.0.38");
}

}  // namespace nodus::backend::slurm
