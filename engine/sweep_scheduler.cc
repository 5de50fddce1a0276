#include "engine/sweep_scheduler.h"

#include <algorithm>
#include <set>

namespace nodus::engine {

void SweepScheduler::add_pending(size_t cell, std::optional<double> worst_case, GpuRequest gpus) {
  pending_.push_back(cell);
  demand_[cell] = Pending{worst_case, std::move(gpus)};
}

void SweepScheduler::reorder(const std::vector<size_t>& order) {
  std::set<size_t> left(pending_.begin(), pending_.end());
  std::vector<size_t> next;
  for (size_t cell : order)
    if (left.erase(cell) > 0) next.push_back(cell);
  for (size_t cell : pending_)
    if (left.count(cell) > 0) next.push_back(cell);
  pending_ = std::move(next);
}

bool SweepScheduler::start_what_fits(Launcher& launcher) {
  bool waiting_for_gpus = false;
  waiting_for_.reset();
  std::map<std::string, int> busy_from;  // GPU type -> the fewest a claim of failed this pass
  for (auto it = pending_.begin(); it != pending_.end() && !stopped_;) {
    if (static_cast<int>(running_.size()) >= parallel_) break;
    const size_t cell = *it;
    const auto worst = demand_[cell].worst_case;
    const GpuRequest& gpus = demand_[cell].gpus;
    if (auto b = busy_from.find(gpus.type);
        gpus.count > 0 && b != busy_from.end() && gpus.count >= b->second) {
      waiting_for_gpus = true;
      ++it;
      continue;
    }
    auto decision = ledger_.try_reserve(worst, !running_.empty());
    if (!decision.grant) {
      if (decision.refusal == BudgetLedger::Refusal::kNever) {
        skipped_ = true;
        launcher.skip(cell, worst, ledger_.left().value_or(0));
        it = pending_.erase(it);
      } else {
        ++it;  // fits once running cells end
      }
      continue;
    }
    if (launcher.start(cell, *decision.grant) == Launcher::Outcome::kGpusBusy) {
      ledger_.settle(decision.grant->reserved, 0);
      waiting_for_gpus = true;
      if (!waiting_for_ && gpus.count > 0) waiting_for_ = gpus;
      if (gpus.count > 0) {
        auto [b, fresh] = busy_from.emplace(gpus.type, gpus.count);
        if (!fresh) b->second = std::min(b->second, gpus.count);
      }
      ++it;
      continue;
    }
    running_[cell] = decision.grant->reserved;
    it = pending_.erase(it);
  }
  return waiting_for_gpus;
}

void SweepScheduler::ended(size_t cell, double cost) {
  auto it = running_.find(cell);
  if (it == running_.end()) return;
  ledger_.settle(it->second, cost);
  running_.erase(it);
}

std::string sweep_outcome(SweepStop stop, bool skipped_for_budget,
                          const std::vector<JobState>& cell_states) {
  if (stop == SweepStop::kStopped) return "stopped";
  if (stop == SweepStop::kInterrupted) return "interrupted";
  auto is = [&](JobState s) { return [s](JobState c) { return c == s; }; };
  if (std::all_of(cell_states.begin(), cell_states.end(), is(JobState::kCompleted)))
    return "completed";
  bool budget_stops = std::any_of(cell_states.begin(), cell_states.end(), is(JobState::kBudget));
  if (skipped_for_budget || budget_stops) return "budget";
  auto all_completed_or = [&](JobState s) {
    return std::all_of(cell_states.begin(), cell_states.end(),
                       [s](JobState c) { return c == JobState::kCompleted || c == s; });
  };
  if (all_completed_or(JobState::kCostCap)) return "cost-cap";
  if (all_completed_or(JobState::kTimeout)) return "timeout";
  const bool failed = std::any_of(cell_states.begin(), cell_states.end(), is_failure);
  return failed ? "failed" : "incomplete";
}

}  // namespace nodus::engine
