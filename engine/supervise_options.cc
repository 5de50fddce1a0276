#include "engine/supervise_options.h"

#include <nlohmann/json.hpp>

#include "core/job.h"

namespace nodus::engine {

nlohmann::json SuperviseOptions::to_json() const {
  nlohmann::json j = {
      {"sample_interval_ms", sample_interval.count()},
      {"util_window_ms", util_window.count()},
      {"metric_regex", metric_regexes},
      {"throughput", throughput_metric},
  };
  j["instrument"] = instrument;
  if (profile) j["profile"] = true;
  j["warmup"] = warmup;
  if (!loader.empty()) j["loader"] = loader;
  if (tf32) j["tf32"] = true;
  if (measure) j["measure_ms"] = measure->count();
  if (cpus_per_gpu) j["cpus_per_gpu"] = *cpus_per_gpu;
  if (nodes > 1) j["nodes"] = nodes;
  j["log_limit"] = log_limit;
  if (min_util) j["min_util"] = *min_util;
  if (budget_cap) j["budget_cap"] = *budget_cap;
  return j;
}

SuperviseOptions SuperviseOptions::from_json(const nlohmann::json& j) {
  SuperviseOptions o;
  if (!j.is_object()) return o;
  o.sample_interval = std::chrono::milliseconds(j.value("sample_interval_ms", int64_t{1000}));
  o.util_window = std::chrono::milliseconds(j.value("util_window_ms", int64_t{300000}));
  if (j.contains("min_util")) o.min_util = j["min_util"].get<double>();
  if (j.contains("budget_cap")) o.budget_cap = j["budget_cap"].get<double>();
  o.metric_regexes = j.value("metric_regex", std::vector<std::string>{});
  o.throughput_metric = j.value("throughput", std::string("samples_per_sec"));
  o.instrument = j.value("instrument", true);
  o.profile = j.value("profile", false);
  o.warmup = j.value("warmup", std::string("5s"));
  if (j.contains("loader") && j["loader"].is_object())
    o.loader = j["loader"].get<std::map<std::string, std::string>>();
  o.tf32 = j.value("tf32", false);
  if (j.contains("cpus_per_gpu")) o.cpus_per_gpu = j["cpus_per_gpu"].get<int>();
  o.log_limit = j.value("log_limit", kDefaultLogLimit);
  o.nodes = nodes_of(j);
  if (j.contains("measure_ms"))
    o.measure = std::chrono::milliseconds(j["measure_ms"].get<int64_t>());
  return o;
}

}  // namespace nodus::engine
