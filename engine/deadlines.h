#pragma once
// When to send SIGTERM and SIGKILL to a job, computed once at start from its caps.
//
// --max-cost: the grace period is billed too, so SIGTERM goes out `grace` before the moment the
// cost reaches the cap and SIGKILL at that moment (less a small margin for the kill itself):
// a capped job's cost never exceeds its cap. --timeout: SIGTERM at the timeout, SIGKILL `grace`
// later, as timeout(1) -k does.

#include <chrono>
#include <optional>

#include "core/job.h"

namespace nodus::engine {

using Seconds = std::chrono::duration<double>;

struct StopPlan {
  JobState reason = JobState::kCompleted;  // kTimeout, kCostCap or kBudget when a stop is planned
  Seconds term_after{0};                   // since start
  Seconds kill_after{0};
};

// Time the kill itself takes on a loaded machine; SIGKILL for a cost cap is sent this early.
inline constexpr Seconds kKillMargin{0.025};

// The earliest stop among the job's caps, or nullopt when it has none.
// budget_cap: the share of a sweep's --budget reserved for this job (a cost cap whose reason
// is kBudget).
std::optional<StopPlan> plan_stop(const JobRecord& job, std::optional<double> budget_cap);

}  // namespace nodus::engine
