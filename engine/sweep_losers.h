#pragma once
// --stop-early FACTOR: successive halving's idea (ASHA, Hyperband) priced in money. Once a
// running cell is past its warm-up, its steady-state cost per sample (its rate over its steady
// throughput) is compared with the best finished cell's; a cell more than FACTOR times worse is
// stopped, recorded as stopped early with what finishing would have cost. Pure: SweepRunner
// feeds it the cells' reports and does the stopping.
//
// Steady state, as telemetry/phases.h has it for a job's own metrics: the reports from the first
// one plus the warm-up on; at least kMinSteadyReports of them are needed before a cell is judged,
// so one slow report never stops a cell. With no rate (CPU-only cells) time per sample is
// compared instead of money.

#include <optional>
#include <string>
#include <vector>

#include "core/samples.h"

namespace nodus::engine {

inline constexpr int kMinSteadyReports = 3;

// The mean of `name`'s reports from (first report + warmup_s) on; nullopt before
// kMinSteadyReports of them exist or when the mean is not positive.
std::optional<double> steady_throughput(const std::vector<MetricPoint>& points,
                                        const std::string& name, double warmup_s);

// A running cell's steady throughput from what is stored of it: its own reports of `name`, or,
// for the default samples_per_sec when the job reports none, the Python hook's (an unmodified
// script: "hook.r<rank>.samples_per_sec", each rank's steady mean summed), the figures its row
// in the comparison table will show.
std::optional<double> running_throughput(const std::vector<MetricPoint>& points,
                                         const std::string& name, double warmup_s);

// What one sample costs at the steady rate: USD (or, with no rate, seconds) per sample.
double per_sample(double usd_per_s, double throughput);

struct LoserVerdict {
  double ratio = 0;  // the running cell's per-sample cost over the best's
  std::string note;  // "stopped early: ..."
  // What finishing would have taken: the best cell's work (its steady throughput x its wall
  // time) at this cell's own pace, less what it has run; filled by the caller.
  double saved_s = 0;
};

// Seconds this cell would still need for `work` samples at `throughput`, having run elapsed_s.
double remaining_seconds(double work, double throughput, double elapsed_s);

// The verdict for a running cell against the best finished cell's per-sample figure; nullopt
// while it is not clearly worse (ratio <= factor).
std::optional<LoserVerdict> judge_running_cell(double cell_per_sample, double best_per_sample,
                                               double factor, const std::string& best_label);

}  // namespace nodus::engine
