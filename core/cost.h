#pragma once
// The one $/GPU-hour formula. Every place that turns GPUs, a rate and a time into dollars (the
// final bill, a live job's cost so far, a dead supervisor's bill, spend reports, a sweep's
// worst case and progress line) calls these, so they cannot drift apart. In core because store/
// bills jobs too and may not depend on billing/.
//
// A job without GPUs is billed as one unit: its rate is then the machine's hourly rate
// (NODUS_LOCAL_USD_PER_HOUR or --rate), 0 when none was declared.

#include <algorithm>
#include <optional>

namespace nodus {

// Dollars per second of `gpus` GPUs at `rate_per_gpu_hour` each.
inline double usd_per_second(int gpus, double rate_per_gpu_hour) {
  return (gpus > 0 ? gpus : 1) * rate_per_gpu_hour / 3600.0;
}

// Cost in USD of `gpus` GPUs at `rate_per_gpu_hour` each for `seconds`.
inline double cost_usd(int gpus, double rate_per_gpu_hour, double seconds) {
  return (gpus > 0 ? gpus : 1) * rate_per_gpu_hour * seconds / 3600.0;
}

// The cap a job is held to, in USD: the lower of its --max-cost and the share of its sweep's
// --budget it was granted; nullopt when it has neither. The stop plan, the final bill, the bill
// of a job whose supervisor died and the tamper check all take the cap from here.
inline std::optional<double> effective_cap(std::optional<double> max_cost,
                                           std::optional<double> budget_share) {
  if (max_cost && budget_share) return std::min(*max_cost, *budget_share);
  return max_cost ? max_cost : budget_share;
}

}  // namespace nodus
