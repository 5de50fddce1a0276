#include "billing/stop_plan.h"

#include <algorithm>
#include <cmath>

#include "billing/catalog.h"
#include "core/cost.h"

namespace nodus::billing {
namespace {

std::optional<StopPlan> cap_plan(double cap, const JobRecord& job, JobState reason) {
  double t_cap = billing::cap_seconds(cap, job.gpu_count, job.rate_per_gpu_hour);
  if (!std::isfinite(t_cap)) return std::nullopt;
  Seconds margin = kKillMargin + (job.backend == "slurm" ? kSlurmEndLag : Seconds(0));
  Seconds kill = std::clamp(Seconds(t_cap) - margin, Seconds(0), kFarthestDeadline);
  Seconds term = std::max(Seconds(0), kill - Seconds(job.grace_ms / 1000.0));
  return StopPlan{reason, term, kill};
}

}  // namespace

std::optional<StopPlan> plan_stop(const JobRecord& job, std::optional<double> budget_cap) {
  std::optional<StopPlan> best;
  auto consider = [&](std::optional<StopPlan> p) {
    if (p && (!best || p->kill_after < best->kill_after)) best = p;
  };
  if (job.timeout_ms) {
    Seconds term = std::min<Seconds>(std::chrono::milliseconds(*job.timeout_ms), kFarthestDeadline);
    consider(StopPlan{JobState::kTimeout, term, term + std::chrono::milliseconds(job.grace_ms)});
  }
  if (auto cap = effective_cap(job.max_cost, budget_cap))
    consider(cap_plan(*cap, job, cap == job.max_cost ? JobState::kCostCap : JobState::kBudget));
  return best;
}

std::optional<StopPlan> plan_stop(const JobRecord& job) {
  return plan_stop(job, budget_cap_of(job));
}

}  // namespace nodus::billing
