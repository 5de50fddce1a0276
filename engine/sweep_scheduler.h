#pragma once
// SweepScheduler decides which of a sweep's cells start next. It is the Plan of ninja's
// Plan/Builder split: no clock, store, process or signal of its own. SweepRunner is the Builder:
// it asks the scheduler to start what fits, does the starting (job row, GPU claim, supervisor)
// through a Launcher, and reports each cell's end with its real cost. tests/engine/ drives it
// with a fake launcher and a fake clock.
//
// The rules, in the order they apply to each pending cell, in cell order:
// - after a stop request nothing starts;
// - no more than --parallel cells run at once;
// - under a --budget a cell starts only when what is left covers its worst case, which stays
//   reserved until the cell ends (BudgetLedger); a cell with no bound of its own runs alone,
//   capped at what is left; a cell that no future can cover is skipped for good;
// - a cell whose GPUs are held (outside the sweep, or by its wider cells) waits, and does not
//   hold back later cells that fit (no idle GPU while a cell that fits waits); once a cell's
//   claim of N GPUs of a type failed, no cell needing N or more of that type is tried again
//   until the next look (their claims would fail too).

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/parse.h"
#include "engine/budget.h"

namespace nodus::engine {

class SweepScheduler {
 public:
  // What the scheduler asks of the world. The real one (SweepRunner) writes job rows, claims
  // GPUs and spawns supervisors; the tests' one keeps a fake GPU pool and clock.
  class Launcher {
   public:
    virtual ~Launcher() = default;
    enum class Outcome { kStarted, kGpusBusy };
    // Starts the cell under the grant (grant.cap: a cost cap the cell must be held to).
    // kGpusBusy: its GPUs are held outside the sweep; nothing started, it waits.
    virtual Outcome start(size_t cell, const BudgetLedger::Grant& grant) = 0;
    // The cell can never start within the budget: its worst case (nullopt: unbounded) exceeds
    // `left`, the most the budget could leave it.
    virtual void skip(size_t cell, std::optional<double> worst_case, double left) = 0;
  };

  SweepScheduler(std::optional<double> budget, int parallel)
      : ledger_(budget), parallel_(parallel) {}

  // A cell finished in an earlier run (--resume): its cost counts against the budget.
  void add_done(double cost) { ledger_.add_spent(cost); }
  // A cell to run, with the most it can cost (worst_case_cost; nullopt: unbounded) and the GPUs
  // it claims (count 0: none, or none the launcher claims).
  void add_pending(size_t cell, std::optional<double> worst_case, GpuRequest gpus = {});

  // Offers the pending cells in `order` from now on (cells in it that are not pending are
  // ignored; pending cells not in it keep their place after it).
  void reorder(const std::vector<size_t>& order);

  // Starts what fits now. Returns true when a cell waits for GPUs held outside the sweep (the
  // caller looks again soon: they free up without an event the sweep sees).
  bool start_what_fits(Launcher& launcher);
  // The GPUs of the first cell, in order, that the last start_what_fits found busy: what the
  // sweep waits for in the machine's queue (store/gpu_queue.h). nullopt when none waited.
  const std::optional<GpuRequest>& waiting_for() const { return waiting_for_; }
  // A running cell ended; `cost` is what it really cost. Its reservation is released.
  void ended(size_t cell, double cost);
  // A stop request (Ctrl-C): nothing more starts; running cells end on their own.
  void stop() { stopped_ = true; }

  bool stopped() const { return stopped_; }
  // Nothing runs and nothing more will start.
  bool finished() const { return running_.empty() && (pending_.empty() || stopped_); }
  const std::vector<size_t>& pending() const { return pending_; }
  size_t running() const { return running_.size(); }
  bool skipped_for_budget() const { return skipped_; }
  const BudgetLedger& ledger() const { return ledger_; }

 private:
  struct Pending {
    std::optional<double> worst_case;
    GpuRequest gpus;
  };
  BudgetLedger ledger_;
  int parallel_;
  bool stopped_ = false;
  bool skipped_ = false;
  std::vector<size_t> pending_;       // cell order
  std::map<size_t, Pending> demand_;  // by cell
  std::map<size_t, double> running_;  // cell -> reserved
  std::optional<GpuRequest> waiting_for_;
};

// How a sweep was asked to end early: not, by Ctrl-C or a hang-up (interrupted), or by SIGTERM,
// which is what `nodus stop` sends (stopped).
enum class SweepStop { kNone, kInterrupted, kStopped };

// A sweep's final state from its cells' final states (cells done in an earlier run count as
// completed): stopped (`nodus stop`), interrupted (Ctrl-C), completed, budget (a cell skipped or
// stopped for the budget), cost-cap (every cell that did not complete was stopped by its
// --max-cost), timeout (... by its --timeout), failed (a cell failed, was lost or tampered with),
// or incomplete (cells were stopped otherwise, by limits of several kinds or a user: none failed).
std::string sweep_outcome(SweepStop stop, bool skipped_for_budget,
                          const std::vector<JobState>& cell_states);

}  // namespace nodus::engine
