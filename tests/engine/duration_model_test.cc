// What the ended cells of a sweep say about the length of the others (engine/duration_model.h),
// and the makespan that ordering by it gives a first run of a grid whose durations follow its
// parameters.

#include "engine/duration_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/sweep_scheduler.h"

namespace nodus::engine {
namespace {

ParamCell cell(std::vector<std::string> values, std::optional<double> seconds = std::nullopt) {
  return {std::move(values), seconds};
}

TEST(DurationModel, RecoversAProductOfFactorsFromPartOfTheGrid) {
  // seconds = model factor x batch factor; 7 of the 12 cells ended (one more than the model's
  // unknowns: an exact fit of as many cells as unknowns would say nothing), every value seen.
  const std::vector<double> model = {1, 2, 4};
  const std::vector<double> batch = {0.5, 1, 1.5, 3};
  std::vector<ParamCell> cells;
  for (size_t m = 0; m < model.size(); ++m)
    for (size_t b = 0; b < batch.size(); ++b)
      cells.push_back(cell({"m" + std::to_string(m), "b" + std::to_string(b)}));
  for (size_t k : {0u, 1u, 2u, 3u, 4u, 5u, 8u}) cells[k].seconds = model[k / 4] * batch[k % 4];
  auto fit = DurationModel::fit(cells);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->adjusted_r2(), 1.0, 1e-9);
  for (size_t k = 0; k < cells.size(); ++k)
    EXPECT_NEAR(fit->estimate(cells[k]), model[k / 4] * batch[k % 4], 1e-6) << "cell " << k;
  // Longest first among the pending ones: m2 b3 (12 s), m1 b3 (6), m2 b2 (6; a tie keeps the
  // order given), m2 b1 (4), m1 b2 (3).
  std::vector<size_t> pending = {6, 7, 9, 10, 11};
  EXPECT_EQ(order_by_estimate(cells, pending).order, (std::vector<size_t>{11, 7, 10, 9, 6}));
}

TEST(DurationModel, AValueNoEndedCellHadCountsAsTheLongestOfItsParameter) {
  std::vector<ParamCell> cells = {
      cell({"a", "x"}, 1), cell({"a", "y"}, 4), cell({"b", "x"}, 2),
      cell({"b", "y"}, 8), cell({"c", "x"}),  // c: never seen; x: seen
  };
  auto fit = DurationModel::fit(cells);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->estimate(cells[4]), 2, 1e-6);  // as long as the longest first value, b
  EXPECT_NEAR(fit->estimate(cell({"c", "z"})), 8, 1e-6);
  EXPECT_NEAR(fit->estimate(cells[1]), 4, 1e-12);  // an ended cell is its own measure
}

TEST(DurationModel, SaysNothingWhenEachCellHasAValueOfItsOwn) {
  // `i=0..31` with unrelated durations: one value per cell, as many unknowns as cells.
  std::vector<ParamCell> cells;
  for (int i = 0; i < 8; ++i)
    cells.push_back(
        cell({std::to_string(i)}, i < 5 ? std::optional<double>(1.0 + i) : std::nullopt));
  EXPECT_FALSE(DurationModel::fit(cells));
  EXPECT_EQ(order_by_estimate(cells, {5, 6, 7}).order, (std::vector<size_t>{5, 6, 7}));
  EXPECT_FALSE(order_by_estimate(cells, {5, 6, 7}).adjusted_r2);
}

TEST(DurationModel, SaysNothingWhenTheParametersExplainNoneOfTheSpread) {
  // No value of either parameter makes a cell longer on average: all in the interaction.
  const double e = std::exp(1.0);
  std::vector<ParamCell> cells = {
      cell({"a", "x"}, e),     cell({"a", "y"}, 1 / e), cell({"a", "z"}, 1),
      cell({"b", "x"}, 1 / e), cell({"b", "y"}, e),     cell({"b", "z"}, 1),
  };
  EXPECT_FALSE(DurationModel::fit(cells));
  EXPECT_FALSE(DurationModel::fit({}));
  // Nor from cells that all took as long.
  EXPECT_FALSE(DurationModel::fit({cell({"a"}, 2), cell({"a"}, 2), cell({"b"}, 2)}));
}

TEST(DurationModel, IgnoresDurationsThatAreNotPositive) {
  std::vector<ParamCell> cells = {cell({"a"}, 0), cell({"a"}, -1), cell({"b"}, std::nan(""))};
  EXPECT_FALSE(DurationModel::fit(cells));
}

// The sweep's scheduler on 8 one-GPU slots with the order redone after every end, as
// SweepRunner does, against grid order: a first run of a 4 x 8 grid whose durations are a
// model factor times a batch factor (a deterministic +-8% wobble per cell), smallest values
// first as people write them, so grid order starts the longest cells last.
double first_run_makespan(const std::vector<ParamCell>& grid, const std::vector<double>& seconds,
                          bool reorder) {
  std::vector<ParamCell> facts = grid;  // seconds filled in as cells end
  std::vector<size_t> pending;
  for (size_t i = 0; i < grid.size(); ++i) pending.push_back(i);
  std::vector<std::pair<double, size_t>> running;  // (ends at, cell)
  double now = 0;
  while (!pending.empty() || !running.empty()) {
    if (reorder) pending = order_by_estimate(facts, pending).order;
    while (!pending.empty() && running.size() < 8) {
      running.emplace_back(now + seconds[pending.front()], pending.front());
      pending.erase(pending.begin());
    }
    auto next = std::min_element(running.begin(), running.end());
    now = next->first;
    facts[next->second].seconds = seconds[next->second];
    running.erase(next);
  }
  return now;
}

TEST(DurationModel, AFirstRunOfARelatedGridPacksNearTheLowerBound) {
  const std::vector<double> model = {0.4, 0.6, 0.8, 1.0};
  const std::vector<double> batch = {0.5, 0.8, 1.1, 1.4, 1.7, 2.0, 2.5, 3.0};
  std::vector<ParamCell> grid;
  std::vector<double> seconds;
  double sum = 0, longest = 0;
  for (size_t m = 0; m < model.size(); ++m)
    for (size_t b = 0; b < batch.size(); ++b) {
      grid.push_back(cell({std::to_string(m), std::to_string(b)}));
      const double wobble = 1 + 0.08 * std::sin(static_cast<double>(7 * m + 3 * b));
      seconds.push_back(1.5 * model[m] * batch[b] * wobble);
      sum += seconds.back();
      longest = std::max(longest, seconds.back());
    }
  const double bound = std::max(sum / 8, longest);
  const double in_order = first_run_makespan(grid, seconds, false);
  const double adaptive = first_run_makespan(grid, seconds, true);
  EXPECT_GT(in_order, 1.2 * bound);
  EXPECT_LT(adaptive, 1.1 * bound) << "grid order " << in_order / bound << " x the bound";
}

TEST(SweepSchedulerReorder, OffersThePendingCellsInTheNewOrder) {
  SweepScheduler s(std::nullopt, 1);
  for (size_t i = 0; i < 4; ++i) s.add_pending(i, std::nullopt);
  s.reorder({3, 9, 1, 3});  // 9: not pending; 3 twice: once
  EXPECT_EQ(s.pending(), (std::vector<size_t>{3, 1, 0, 2}));
}

}  // namespace
}  // namespace nodus::engine
