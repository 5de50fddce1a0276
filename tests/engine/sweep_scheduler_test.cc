// The sweep scheduler against a fake launcher: a pool of GPUs (some held outside the sweep), a
// fake clock, and cells that run for a set time at a set cost. Every rule of the scheduler has a
// test here; the real launcher (SweepRunner) is covered end to end by tests/cli/sweep_test.cc.

#include "engine/sweep_scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/budget.h"

namespace nodus::engine {
namespace {

struct FakeCell {
  int gpus = 0;
  double seconds = 1;  // how long it runs
  double cost = 0;     // what it really costs
};

// Starts cells on a fake GPU pool and ends them on a fake clock.
class FakeLauncher : public SweepScheduler::Launcher {
 public:
  FakeLauncher(std::vector<FakeCell> cells, int free_gpus)
      : cells_(std::move(cells)), free_gpus(free_gpus) {}

  Outcome start(size_t cell, const BudgetLedger::Grant& grant) override {
    if (cells_[cell].gpus > free_gpus) {
      ++busy_answers;
      return Outcome::kGpusBusy;
    }
    free_gpus -= cells_[cell].gpus;
    started.push_back(cell);
    started_at[cell] = now;
    caps[cell] = grant.cap;
    running[cell] = now + cells_[cell].seconds;
    max_running = std::max(max_running, static_cast<int>(running.size()));
    return Outcome::kStarted;
  }
  void skip(size_t cell, std::optional<double> worst_case, double left) override {
    skipped.push_back(cell);
    skip_left[cell] = left;
  }

  // Advances the clock to the next cell's end and reports it. False if nothing runs.
  bool end_next(SweepScheduler& s) {
    if (running.empty()) return false;
    auto next = running.begin();
    for (auto it = running.begin(); it != running.end(); ++it)
      if (it->second < next->second) next = it;
    now = next->second;
    size_t cell = next->first;
    running.erase(next);
    free_gpus += cells_[cell].gpus;
    s.ended(cell, cells_[cell].cost);
    return true;
  }

  // Runs the sweep to its end the way SweepRunner does: start what fits, wait for an end.
  void run(SweepScheduler& s) {
    while (true) {
      s.start_what_fits(*this);
      if (s.finished()) return;
      ASSERT_TRUE(end_next(s)) << "the scheduler waits but nothing runs";
    }
  }

  std::vector<FakeCell> cells_;
  int free_gpus;
  double now = 0;
  std::vector<size_t> started;
  std::vector<size_t> skipped;
  std::map<size_t, double> started_at;
  std::map<size_t, std::optional<double>> caps;
  std::map<size_t, double> skip_left;
  std::map<size_t, double> running;  // cell -> end time
  int max_running = 0;
  int busy_answers = 0;
};

SweepScheduler scheduler_for(size_t n, std::optional<double> budget, int parallel,
                             std::optional<double> worst) {
  SweepScheduler s(budget, parallel);
  for (size_t i = 0; i < n; ++i) s.add_pending(i, worst);
  return s;
}

TEST(SweepScheduler, NoMoreThanParallelRunAtOnceAndCellsStartInOrder) {
  FakeLauncher fake(std::vector<FakeCell>(5, FakeCell{0, 1.0, 0}), 0);
  auto s = scheduler_for(5, std::nullopt, 2, 0.0);
  fake.run(s);
  EXPECT_EQ(fake.max_running, 2);
  EXPECT_EQ(fake.started, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(fake.now, 3.0);  // 5 cells of 1 s, 2 at a time
  EXPECT_TRUE(s.finished());
}

TEST(SweepScheduler, PacksOneGpuCellsOntoTheFreeGpus) {
  FakeLauncher fake(std::vector<FakeCell>(4, FakeCell{1, 1.0, 0}), 2);
  auto s = scheduler_for(4, std::nullopt, 1 << 20, 0.0);
  fake.run(s);
  EXPECT_EQ(fake.max_running, 2);
  EXPECT_DOUBLE_EQ(fake.now, 2.0);
}

TEST(SweepScheduler, ACellWhoseGpusAreBusyWaitsWithoutHoldingBackOnesThatFit) {
  // Cell 0 needs 2 GPUs, one of the two is held outside the sweep; cell 1 needs 1.
  FakeLauncher fake({{2, 1.0, 0}, {1, 1.0, 0}}, 1);
  auto s = scheduler_for(2, std::nullopt, 4, 0.0);
  EXPECT_TRUE(s.start_what_fits(fake)) << "a cell waits for GPUs: the caller must look again";
  EXPECT_EQ(fake.started, (std::vector<size_t>{1}));
  EXPECT_EQ(s.pending(), (std::vector<size_t>{0}));
  ASSERT_TRUE(fake.end_next(s));
  EXPECT_TRUE(s.start_what_fits(fake)) << "still one GPU held outside";
  fake.free_gpus += 1;  // the outside job ends
  EXPECT_FALSE(s.start_what_fits(fake));
  EXPECT_EQ(fake.started, (std::vector<size_t>{1, 0}));
}

TEST(SweepScheduler, AfterAClaimOfNGpusFailsNoCellNeedingNOrMoreIsTriedThatPass) {
  // 8 GPUs of which 7 are busy: cells 0-2 need 2, cell 3 needs 1, cell 4 needs 3 of another
  // type (free in plenty). One failed claim of 2 is enough to know 2 and 3 fail too.
  FakeLauncher fake({{2, 1.0, 0}, {2, 1.0, 0}, {4, 1.0, 0}, {1, 1.0, 0}, {0, 1.0, 0}}, 1);
  SweepScheduler s(std::nullopt, 8);
  s.add_pending(0, 0.0, {"H100", 2});
  s.add_pending(1, 0.0, {"H100", 2});
  s.add_pending(2, 0.0, {"H100", 4});
  s.add_pending(3, 0.0, {"H100", 1});
  s.add_pending(4, 0.0, {"A100", 3});  // claims nothing from the fake's pool (gpus 0)
  EXPECT_TRUE(s.start_what_fits(fake));
  EXPECT_EQ(fake.busy_answers, 1) << "cells 1 and 2 were tried after cell 0's claim failed";
  EXPECT_EQ(fake.started, (std::vector<size_t>{3, 4}));
  EXPECT_EQ(s.pending(), (std::vector<size_t>{0, 1, 2}));
  fake.free_gpus = 4;  // the next look tries again from the first
  EXPECT_TRUE(s.start_what_fits(fake));
  EXPECT_EQ(fake.started, (std::vector<size_t>{3, 4, 0, 1}));
  EXPECT_EQ(s.pending(), (std::vector<size_t>{2}));
}

TEST(SweepScheduler, BusyGpusReleaseTheReservation) {
  // $10 budget, $6 worst case: while cell 0 waits for GPUs its $6 must not stay reserved, or
  // cell 1 (CPU-only here) could not start.
  FakeLauncher fake({{1, 1.0, 1.0}, {0, 1.0, 1.0}}, 0);
  SweepScheduler s(10.0, 4);
  s.add_pending(0, 6.0);
  s.add_pending(1, 6.0);
  EXPECT_TRUE(s.start_what_fits(fake));
  EXPECT_EQ(fake.started, (std::vector<size_t>{1}));
  EXPECT_DOUBLE_EQ(*s.ledger().left(), 4.0);
}

TEST(SweepScheduler, ReservesEachCellsWorstCaseUntilItEnds) {
  // $10 budget, $4 worst case each, $1 real cost: two start, the third waits for an end.
  FakeLauncher fake(std::vector<FakeCell>(3, FakeCell{0, 1.0, 1.0}), 0);
  auto s = scheduler_for(3, 10.0, 8, 4.0);
  EXPECT_FALSE(s.start_what_fits(fake));
  EXPECT_EQ(fake.started, (std::vector<size_t>{0, 1}));
  EXPECT_DOUBLE_EQ(*s.ledger().left(), 2.0);
  ASSERT_TRUE(fake.end_next(s));  // $1 spent, $4 released: 10 - 1 - 4 = 5 left
  EXPECT_DOUBLE_EQ(*s.ledger().left(), 5.0);
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started, (std::vector<size_t>{0, 1, 2}));
  fake.run(s);
  EXPECT_DOUBLE_EQ(s.ledger().spent(), 3.0);
  EXPECT_FALSE(s.skipped_for_budget());
  for (const auto& [cell, cap] : fake.caps) EXPECT_FALSE(cap) << "bounded cells need no cap";
}

TEST(SweepScheduler, ACellNoFutureCanCoverIsSkippedAndLaterOnesStillRun) {
  // $5 budget with $2 spent by a resumed cell: a $4 worst case can never fit; $1 cells can.
  FakeLauncher fake({{0, 1, 1}, {0, 1, 0.5}, {0, 1, 0.5}}, 0);
  SweepScheduler s(5.0, 4);
  s.add_done(2.0);
  s.add_pending(0, 4.0);
  s.add_pending(1, 1.0);
  s.add_pending(2, 1.0);
  fake.run(s);
  EXPECT_EQ(fake.skipped, (std::vector<size_t>{0}));
  EXPECT_DOUBLE_EQ(fake.skip_left[0], 3.0);
  EXPECT_EQ(fake.started, (std::vector<size_t>{1, 2}));
  EXPECT_TRUE(s.skipped_for_budget());
  EXPECT_DOUBLE_EQ(s.ledger().spent(), 3.0);
}

TEST(SweepScheduler, ACellThatFitsOnceOthersEndWaitsInsteadOfBeingSkipped) {
  // $10 budget, $6 worst case: the second cannot start beside the first, but fits after it.
  FakeLauncher fake(std::vector<FakeCell>(2, FakeCell{0, 1.0, 2.0}), 0);
  auto s = scheduler_for(2, 10.0, 8, 6.0);
  fake.run(s);
  EXPECT_TRUE(fake.skipped.empty());
  EXPECT_EQ(fake.max_running, 1);
  EXPECT_DOUBLE_EQ(fake.started_at[1], 1.0);
}

TEST(SweepScheduler, AnUnboundedCellRunsAloneCappedAtWhatIsLeft) {
  // $10 budget: cells 0 ($3 worst case, real $2, 1 s) and 2 ($1 worst case, real $1, 2 s) start;
  // the unbounded cell 1 waits (it never runs beside another) until both ended, then runs alone
  // with a cap of 10 - 2 - 1 = $7.
  FakeLauncher fake({{0, 1, 2}, {0, 1, 5}, {0, 2, 1}}, 0);
  SweepScheduler s(10.0, 8);
  s.add_pending(0, 3.0);
  s.add_pending(1, std::nullopt);
  s.add_pending(2, 1.0);
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started, (std::vector<size_t>{0, 2})) << "a waiting cell holds back none that fit";
  ASSERT_TRUE(fake.end_next(s));
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started, (std::vector<size_t>{0, 2})) << "cell 2 still runs";
  ASSERT_TRUE(fake.end_next(s));
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started, (std::vector<size_t>{0, 2, 1}));
  ASSERT_TRUE(fake.caps[1]);
  EXPECT_DOUBLE_EQ(*fake.caps[1], 7.0);
  EXPECT_DOUBLE_EQ(*s.ledger().left(), 0.0) << "the whole rest is reserved for it";
  fake.run(s);
  EXPECT_DOUBLE_EQ(s.ledger().spent(), 8.0);
}

TEST(SweepScheduler, NothingStartsBesideARunningUnboundedCell) {
  FakeLauncher fake({{0, 1, 1}, {0, 1, 1}}, 0);
  SweepScheduler s(10.0, 8);
  s.add_pending(0, std::nullopt);
  s.add_pending(1, 1.0);
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started, (std::vector<size_t>{0}));
  ASSERT_TRUE(fake.end_next(s));  // $1 spent, the $10 reservation released
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started, (std::vector<size_t>{0, 1}));
  EXPECT_DOUBLE_EQ(*s.ledger().left(), 8.0);
}

TEST(SweepScheduler, AnUnboundedCellIsSkippedWhenNothingIsLeft) {
  FakeLauncher fake({{0, 1, 0}}, 0);
  SweepScheduler s(1.0, 1);
  s.add_done(1.0);
  s.add_pending(0, std::nullopt);
  fake.run(s);
  EXPECT_EQ(fake.skipped, (std::vector<size_t>{0}));
  EXPECT_TRUE(fake.started.empty());
  EXPECT_TRUE(s.skipped_for_budget());
}

TEST(SweepScheduler, WithoutABudgetUnboundedCellsRunSideBySideUncapped) {
  FakeLauncher fake(std::vector<FakeCell>(3, FakeCell{0, 1, 100}), 0);
  auto s = scheduler_for(3, std::nullopt, 3, std::nullopt);
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started.size(), 3u);
  for (const auto& [cell, cap] : fake.caps) EXPECT_FALSE(cap);
}

TEST(SweepScheduler, AfterAStopRequestNothingStartsAndRunningCellsEnd) {
  FakeLauncher fake(std::vector<FakeCell>(4, FakeCell{0, 1, 1}), 0);
  auto s = scheduler_for(4, std::nullopt, 2, 0.0);
  s.start_what_fits(fake);
  s.stop();
  EXPECT_FALSE(s.finished()) << "two cells still run";
  s.start_what_fits(fake);
  EXPECT_EQ(fake.started.size(), 2u);
  ASSERT_TRUE(fake.end_next(s));
  ASSERT_TRUE(fake.end_next(s));
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.pending(), (std::vector<size_t>{2, 3})) << "never started: the runner cancels them";
}

TEST(SweepScheduler, AStopWhileWaitingForGpusFinishesAtOnce) {
  FakeLauncher fake({{1, 1, 0}}, 0);
  auto s = scheduler_for(1, std::nullopt, 1, 0.0);
  EXPECT_TRUE(s.start_what_fits(fake));
  EXPECT_FALSE(s.finished());
  s.stop();
  EXPECT_TRUE(s.finished());
  EXPECT_FALSE(s.start_what_fits(fake));
}

TEST(SweepScheduler, AnEndTheSchedulerDidNotStartIsIgnored) {
  SweepScheduler s(10.0, 1);
  s.ended(7, 3.0);
  EXPECT_DOUBLE_EQ(s.ledger().spent(), 0.0);
}

TEST(SweepOutcome, EachFinalState) {
  using S = JobState;
  EXPECT_EQ(sweep_outcome(SweepStop::kInterrupted, false, {S::kCompleted}), "interrupted");
  EXPECT_EQ(sweep_outcome(SweepStop::kStopped, false, {S::kStopped}), "stopped");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCostCap, S::kCostCap}), "cost-cap");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCompleted, S::kCostCap}), "cost-cap");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kFailed, S::kCostCap}), "failed");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCompleted, S::kCompleted}), "completed");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {}), "completed");
  // A cell skipped for the budget never ran: its row is still waiting.
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, true, {S::kCompleted, S::kWaiting}), "budget");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCompleted, S::kBudget}), "budget");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCompleted, S::kFailed}), "failed");
  // No cell failed: the state says what stopped the others, as the cell counts do.
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCompleted, S::kTimeout}), "timeout");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kTimeout, S::kCostCap}), "incomplete");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCompleted, S::kLowUtil}), "incomplete");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kTimeout, S::kLost}), "failed");
  EXPECT_EQ(sweep_outcome(SweepStop::kNone, false, {S::kCompleted, S::kTampered}), "failed");
}

// A job without GPUs is billed at the machine's rate (--rate, NODUS_LOCAL_USD_PER_HOUR) as one
// unit: its worst case is that rate for its timeout and grace, as its bill would be.
TEST(WorstCaseCost, AJobWithoutGpusAtARateIsNotFree) {
  EXPECT_DOUBLE_EQ(*worst_case_cost(0, 900, std::nullopt, 10'000, 10'000), 5.0);
  EXPECT_DOUBLE_EQ(*worst_case_cost(0, 360, 0.15, std::nullopt, 10'000), 0.15);
  EXPECT_DOUBLE_EQ(*worst_case_cost(2, 360, std::nullopt, 10'000, 0), 2.0);
  EXPECT_FALSE(worst_case_cost(0, 360, std::nullopt, std::nullopt, 10'000).has_value());
  EXPECT_DOUBLE_EQ(*worst_case_cost(0, 0, std::nullopt, std::nullopt, 10'000), 0.0);
}

}  // namespace
}  // namespace nodus::engine
