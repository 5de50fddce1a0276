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

namespace nodus::billing {

using Seconds = std::chrono::duration<double>;

struct StopPlan {
  JobState reason = JobState::kCompleted;  // kTimeout, kCostCap or kBudget when a stop is planned
  Seconds term_after{0};                   // since start
  Seconds kill_after{0};
};

// Time the kill itself takes on a loaded machine; SIGKILL for a cost cap is sent this early.
inline constexpr Seconds kKillMargin{0.025};
// On Slurm the bill ends at the job's end_time, which Slurm records after the last process
// died (slurmstepd waits for the job's container to empty in steps of 1 s; measured 1.0-1.1 s
// on the dev cluster): a money cap's TERM and KILL come this much earlier there, so that
// Slurm's own record stays within the cap. The engine and Slurm's node use the same moments.
inline constexpr Seconds kSlurmEndLag{1.5};

// Deadlines further away than this (a --max-cost of millions at a cheap rate) are held here:
// far beyond any real run, and inside what steady_clock and Slurm's minutes can represent.
inline constexpr Seconds kFarthestDeadline{10.0 * 365 * 24 * 3600};

// The earliest stop among the job's caps, or nullopt when it has none.
// budget_cap: the share of a sweep's --budget reserved for this job (a cost cap whose reason
// is kBudget).
std::optional<StopPlan> plan_stop(const JobRecord& job, std::optional<double> budget_cap);

// The same plan from the record alone: what a backend that enforces the caps away from this
// process (Slurm's node) uses, so both stop at the same moments.
std::optional<StopPlan> plan_stop(const JobRecord& job);

}  // namespace nodus::billing
