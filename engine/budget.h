#pragma once
// BudgetLedger keeps a sweep's --budget: a cell starts only when what is left covers its worst
// case, and that worst case stays reserved until the cell ends and its real cost is known.
// A cell with no bound of its own (no --max-cost, no --timeout) is unbounded: it runs alone,
// capped at whatever is left, so the sweep's total can never pass the budget.

#include <optional>

namespace nodus::engine {

class BudgetLedger {
 public:
  explicit BudgetLedger(std::optional<double> budget) : budget_(budget) {}

  struct Grant {
    double reserved = 0;
    std::optional<double> cap;  // a cost cap to enforce on the cell, when its own does not suffice
  };
  enum class Refusal { kWait, kNever };

  // worst_case: the most the cell can cost (nullopt: unbounded). others_running: cells hold
  // reservations now. kWait: may fit once running cells end; kNever: can never fit.
  struct Decision {
    std::optional<Grant> grant;
    Refusal refusal = Refusal::kWait;
  };
  Decision try_reserve(std::optional<double> worst_case, bool others_running);

  // A cell ended: its reservation is released and its real cost spent.
  void settle(double reserved, double cost);
  void add_spent(double cost) { spent_ += cost; }  // cells finished before (resume)

  std::optional<double> budget() const { return budget_; }
  double spent() const { return spent_; }
  std::optional<double> left() const;  // budget - spent - reserved

 private:
  std::optional<double> budget_;
  double spent_ = 0;
  double reserved_ = 0;
};

// The worst-case cost of a job from its caps: min(max_cost, gpus x rate x (timeout + grace)).
std::optional<double> worst_case_cost(int gpus, double rate_per_gpu_hour,
                                      std::optional<double> max_cost,
                                      std::optional<long long> timeout_ms, long long grace_ms);

}  // namespace nodus::engine
