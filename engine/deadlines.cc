#include "engine/deadlines.h"

#include <algorithm>
#include <cmath>

#include "billing/catalog.h"

namespace nodus::engine {
namespace {

std::optional<StopPlan> cap_plan(double cap, const JobRecord& job, JobState reason) {
  double t_cap = billing::cap_seconds(cap, job.gpu_count, job.rate_per_gpu_hour);
  if (!std::isfinite(t_cap)) return std::nullopt;
  Seconds kill = std::max(Seconds(0), Seconds(t_cap) - kKillMargin);
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
    Seconds term = std::chrono::milliseconds(*job.timeout_ms);
    consider(StopPlan{JobState::kTimeout, term, term + std::chrono::milliseconds(job.grace_ms)});
  }
  if (job.max_cost) consider(cap_plan(*job.max_cost, job, JobState::kCostCap));
  if (budget_cap && (!job.max_cost || *budget_cap < *job.max_cost))
    consider(cap_plan(*budget_cap, job, JobState::kBudget));
  return best;
}

}  // namespace nodus::engine
