#include "backend/slurm/array.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <thread>

#include "backend/slurm/job_script.h"
#include "backend/slurm/rest.h"

namespace nodus::backend::slurm {
namespace {

bool valid_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<int> to_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string ArrayJob::output_path(int index) const {
  return output_dir + "/" + name + "-" + std::to_string(index) + ".out";
}

std::vector<int> expand_task_string(std::string_view text) {
  std::vector<int> out;
  text = text.substr(0, text.find('%'));
  while (!text.empty()) {
    std::string_view item = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), item.size() + 1));
    int step = 1;
    if (auto colon = item.find(':'); colon != std::string_view::npos) {
      step = to_int(item.substr(colon + 1)).value_or(1);
      item = item.substr(0, colon);
    }
    auto dash = item.find('-');
    auto first = to_int(item.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : to_int(item.substr(dash + 1));
    if (!first || !last || step <= 0) continue;
    for (int i = *first; i <= *last; i += step) out.push_back(i);
  }
  return out;
}

Result<std::string> array_script(const std::vector<ArrayCell>& cells) {
  std::string script = "#!/bin/bash\n# nodus sweep: array task i runs cell i\n";
  script += "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n";
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].argv.empty())
      return Error::permanent("sweep cell " + std::to_string(i) + ": the command is empty");
    script += "  " + std::to_string(i) + ")";
    for (const auto& [name, value] : cells[i].env) {
      if (!valid_env_name(name))
        return Error::permanent("sweep cell " + std::to_string(i) + ": invalid variable name '" +
                                name + "'");
      script += " export " + name + "=" + shell_quote(value) + ";";
    }
    script += " " + exec_line(cells[i].argv) + " ;;\n";
  }
  script +=
      "  *) echo \"nodus: no sweep cell for array task ${SLURM_ARRAY_TASK_ID:-?}\" >&2;"
      " exit 125 ;;\nesac\n";
  return script;
}

std::vector<ArrayTask> tasks_from_records(const std::vector<SlurmJob>& records, int64_t array_id,
                                          int count) {
  std::map<int, ArrayTask> by_index;
  auto add = [&](int index, const SlurmJob& r, int64_t job_id) {
    if (index < 0 || index >= count) return;
    ArrayTask t;
    t.index = index;
    t.array_id = array_id;
    t.job_id = job_id;
    t.state = r.state;
    t.phase = phase_of(r.state);
    if (t.phase != Phase::kQueued) t.started_at = r.start_time;
    if (t.phase == Phase::kFinal) t.outcome = outcome_of(r);
    by_index[index] = t;
  };
  for (const auto& r : records) {
    if (r.array_job_id != array_id) continue;
    if (r.array_task_id)
      add(*r.array_task_id, r, r.job_id);
    else
      for (int index : expand_task_string(r.array_task_string)) add(index, r, 0);
  }
  std::vector<ArrayTask> tasks;
  for (auto& [index, task] : by_index) tasks.push_back(std::move(task));
  return tasks;
}

SlurmArrays::SlurmArrays(std::unique_ptr<RestClient> client) : client_(std::move(client)) {}
SlurmArrays::~SlurmArrays() = default;

Result<std::unique_ptr<SlurmArrays>> SlurmArrays::from_config() {
  auto client = connect_from_config();
  if (!client) return client.error();
  return std::make_unique<SlurmArrays>(std::move(*client));
}

Result<ArrayJob> SlurmArrays::submit(const ArraySpec& spec) {
  if (spec.cells.empty()) return Error::permanent("a sweep array needs at least one cell");
  if (spec.name.empty()) return Error::permanent("a sweep array needs a name");
  auto script = array_script(spec.cells);
  if (!script) return script.error();
  const SlurmSettings& settings = client_->settings();

  ArrayJob array;
  array.name = spec.name;
  array.output_dir = settings.workdir;
  SubmitRequest r;
  r.script = *script;
  r.name = spec.name;
  r.time_limit_minutes = spec.time_limit_minutes;
  r.working_dir = spec.workdir.empty() ? settings.workdir : spec.workdir;
  r.output_path = array.output_dir + "/" + spec.name + "-%a.out";
  LaunchSpec launch;
  launch.env = spec.env;
  r.env = job_environment(launch, settings);
  r.gres = gres_request(spec.gpu_type, spec.gpu_count, settings);
  r.partition = settings.partition;
  r.array = "0-" + std::to_string(spec.cells.size() - 1);
  if (spec.parallel > 0) r.array += "%" + std::to_string(spec.parallel);

  auto delay = std::chrono::milliseconds(500);
  for (int attempt = 1;; ++attempt) {
    auto id = client_->submit(r);
    if (id) {
      array.id = *id;
      return array;
    }
    if (!id.error().retryable() || attempt >= 4)
      return Error::permanent("cannot submit the sweep to Slurm: " + id.error().message);
    // As for single jobs: the answer may be lost after slurmctld took the array.
    if (auto all = client_->jobs(); all) {
      for (const auto& j : *all)
        if (j.name == spec.name && j.array_job_id > 0) {
          array.id = j.array_job_id;
          return array;
        }
    }
    std::this_thread::sleep_for(delay);
    delay *= 2;
  }
}

Result<std::vector<ArrayTask>> SlurmArrays::tasks(const ArrayJob& array, int count) {
  auto records = client_->job(array.id);
  if (!records) return records.error();
  return tasks_from_records(*records, array.id, count);
}

Result<void> SlurmArrays::cancel_task(const ArrayTask& task, std::string_view signal) {
  if (task.phase == Phase::kFinal) return {};
  std::string ref = std::to_string(task.array_id) + "_" + std::to_string(task.index);
  auto sent = client_->cancel(ref, signal);
  if (!sent) return sent.error();
  if (*sent == Delivery::kNotRunning) {
    sent = client_->cancel(ref);
    if (!sent) return sent.error();
  }
  return {};
}

Result<void> SlurmArrays::cancel(const ArrayJob& array) {
  auto sent = client_->cancel(std::to_string(array.id));
  if (!sent) return sent.error();
  return {};
}

}  // namespace nodus::backend::slurm
