#pragma once
// Summary condenses one job's telemetry into the figures tables and the diagnosis use; it is
// stored as the job's stats. A figure whose inputs are missing is empty, never a made-up 0: no
// GPU samples, no utilization; no host samples, no CPU figures; no data_wait reports, no share.

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "core/idle.h"
#include "core/samples.h"

namespace nodus::telemetry {

// A round below this utilization counts as idle (idle_fraction): the threshold the report uses.
inline constexpr double kIdleUtil = kIdleUtilPercent;
// The sawtooth score counts steps between a round below kSawLow and one above kSawHigh.
inline constexpr double kSawLow = 10;
inline constexpr double kSawHigh = 50;

struct SummaryInput {
  std::vector<GpuSample> gpu;
  std::vector<HostSample> host;
  std::vector<MetricPoint> metrics;
  double cost = 0;    // USD
  double wall_s = 0;  // seconds from start to end
};

struct Summary {
  // GPU utilization, percent, over the job's rounds (each round averaged across its GPUs).
  std::optional<double> util_mean;
  std::optional<double> util_median;
  std::optional<double> util_stddev;    // how steady the series is
  std::optional<double> idle_fraction;  // rounds below kIdleUtil, 0..1
  // 0..1: the share of steps between consecutive rounds that jump between near idle (<10%) and
  // busy (>50%). A steady series scores 0, a strict busy/idle alternation 1. Needs 2 rounds.
  std::optional<double> sawtooth;
  int n_samples = 0;  // rounds
  int n_gpus = 0;     // distinct GPUs seen

  // Host CPU of the job's process tree.
  std::optional<double> cpu_percent_mean;  // 100 = one core
  std::optional<int> cores;                // the most cores available in any sample
  std::optional<double> cpu_saturation;    // mean of cpu_percent / (cores x 100), 0..1
  std::optional<double> max_process_cpu;   // the busiest single process, percent of one core
  int n_host_samples = 0;

  // Mean of the job's data_wait reports after the first (the first covers start-up); the only
  // report when there is one. A fraction 0..1.
  std::optional<double> data_wait_share;
  int n_data_wait = 0;

  double cost = 0;
  double wall_s = 0;
  std::optional<double> idle_usd;  // cost x (1 - util_mean / 100)
};

Summary summarize(const SummaryInput& in);

// JSON with only the present fields, as stored in the job's stats; from_json reads back what
// to_json wrote and ignores other keys (stats also hold figures from other modules).
void to_json(nlohmann::json& j, const Summary& s);
void from_json(const nlohmann::json& j, Summary& s);

}  // namespace nodus::telemetry
