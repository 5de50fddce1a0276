#include "engine/budget.h"

#include <algorithm>

#include "core/cost.h"

namespace nodus::engine {

// Below this nothing useful can run: a hundredth of a cent.
static constexpr double kDust = 1e-4;

std::optional<double> BudgetLedger::left() const {
  if (!budget_) return std::nullopt;
  return std::max(0.0, *budget_ - spent_ - reserved_);
}

BudgetLedger::Decision BudgetLedger::try_reserve(std::optional<double> worst_case,
                                                 bool others_running) {
  if (!budget_) return {Grant{}, Refusal::kWait};
  double left_now = *left();
  if (worst_case) {
    if (*worst_case <= left_now) {
      reserved_ += *worst_case;
      return {Grant{*worst_case, std::nullopt}, Refusal::kWait};
    }
    // What is left only shrinks while others run, and grows back at most to budget - spent.
    double best_case_left = std::max(0.0, *budget_ - spent_);
    return {std::nullopt, *worst_case <= best_case_left ? Refusal::kWait : Refusal::kNever};
  }
  if (others_running) return {std::nullopt, Refusal::kWait};
  if (left_now < kDust) return {std::nullopt, Refusal::kNever};
  reserved_ += left_now;
  return {Grant{left_now, left_now}, Refusal::kWait};
}

void BudgetLedger::settle(double reserved, double cost) {
  reserved_ = std::max(0.0, reserved_ - reserved);
  spent_ += cost;
}

std::optional<double> worst_case_cost(int gpus, double rate, std::optional<double> max_cost,
                                      std::optional<long long> timeout_ms, long long grace_ms) {
  std::optional<double> worst = max_cost;
  if (timeout_ms) {
    double by_time = cost_usd(gpus, rate, (*timeout_ms + grace_ms) / 1000.0);
    worst = worst ? std::min(*worst, by_time) : by_time;
  }
  if (!(rate > 0)) return 0.0;  // nothing bills it (a job without GPUs and no machine rate)
  return worst;
}

}  // namespace nodus::engine
