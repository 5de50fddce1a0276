#pragma once
// Options that govern a job while it runs. They are kept in the job's row (JobRecord::options)
// so a supervisor started in another process (detached runs, sweep cells) sees the same ones.

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nodus::engine {

struct SuperviseOptions {
  std::chrono::milliseconds sample_interval{1000};
  std::optional<double> min_util;  // percent, with util_window
  std::chrono::milliseconds util_window{std::chrono::minutes(5)};
  std::optional<double> budget_cap;         // a sweep's budget share for this job (USD)
  std::vector<std::string> metric_regexes;  // "NAME=REGEX"
  std::string throughput_metric = "samples_per_sec";
  bool instrument = true;     // the Python hook for jobs that run Python (--no-instrument)
  bool profile = false;       // torch.profiler inside the hook (--profile)
  std::string warmup = "5s";  // batches ("20") or a duration (--warmup)
  // DataLoader knobs the hook sets (--loader; telemetry/pyhook.h): knob -> value.
  std::map<std::string, std::string> loader;
  bool tf32 = false;  // TF32 for FP32 matmuls and convolutions, set by the hook (--tf32)
  std::optional<std::chrono::milliseconds> measure;  // stop after this much steady state
  std::optional<int> cpus_per_gpu;                   // --cpus-per-gpu (backend/local/cpuset.h)
  uint64_t log_limit = kDefaultLogLimit;             // --log-limit in bytes; 0: none
  int nodes = 1;  // --nodes: a Slurm job on this many nodes (core/job.h nodes_of)
  static constexpr uint64_t kDefaultLogLimit = uint64_t{1} << 30;

  nlohmann::json to_json() const;
  static SuperviseOptions from_json(const nlohmann::json& j);
};

}  // namespace nodus::engine
