// The order a sweep's pending cells are offered in (engine/cell_order.h): longest first when
// earlier runs tell the durations, and where those durations come from in the store.

#include "engine/cell_order.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace nodus::engine {
namespace {

// Makespan of starting `seconds` in `order` on `gpus` one-GPU slots, each cell as soon as a slot
// frees (what SweepScheduler does with no budget and no GPUs held outside the sweep).
double list_makespan(const std::vector<double>& seconds, const std::vector<size_t>& order,
                     int gpus) {
  std::vector<double> free_at(gpus, 0.0);
  for (size_t cell : order) {
    auto slot = std::min_element(free_at.begin(), free_at.end());
    *slot += seconds[cell];
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

TEST(OrderCells, NothingKnownKeepsTheOrderGiven) {
  std::vector<CellEstimate> cells = {{3, {}}, {1, {}}, {2, {}}};
  EXPECT_EQ(order_cells(cells), (std::vector<size_t>{3, 1, 2}));
  EXPECT_TRUE(order_cells({}).empty());
}

TEST(OrderCells, UnknownFirstThenLongestFirstTiesInOrder) {
  std::vector<CellEstimate> cells = {{0, 1.0}, {1, {}}, {2, 5.0}, {3, 1.0}, {4, {}}, {5, 3.0}};
  EXPECT_EQ(order_cells(cells), (std::vector<size_t>{1, 4, 2, 5, 0, 3}));
}

// The 32 durations of bench/RESULTS.md (seed 42) on 8 GPUs: grid order is 1.149 x the lower
// bound, longest first 1.023 x (the bench's goal is 1.05 with nodus's own overhead on top).
TEST(OrderCells, LongestFirstPacksTheBenchCellsNearTheLowerBound) {
  const std::vector<double> d = {2.10, 0.56, 1.19, 1.06, 1.06, 2.34, 2.19, 2.73, 0.72, 0.72, 1.55,
                                 0.57, 1.05, 1.76, 1.76, 0.57, 1.00, 2.12, 1.86, 1.86, 1.05, 1.97,
                                 2.52, 0.52, 0.52, 2.51, 2.25, 1.35, 0.89, 0.89, 2.89, 1.34};
  ASSERT_EQ(d.size(), 32u);
  double sum = 0;
  for (double x : d) sum += x;
  const double bound = std::max(sum / 8, *std::max_element(d.begin(), d.end()));
  std::vector<CellEstimate> cells;
  std::vector<size_t> grid;
  for (size_t i = 0; i < d.size(); ++i) {
    cells.push_back({i, d[i]});
    grid.push_back(i);
  }
  const auto order = order_cells(cells);
  ASSERT_EQ(order.size(), d.size());
  EXPECT_GT(list_makespan(d, grid, 8), 1.10 * bound);
  EXPECT_LT(list_makespan(d, order, 8), 1.03 * bound);
}

// With every duration known and 8 at a time, the cells go in the order of a plan whose lanes
// are even to 0.2% of the bound, where longest first leaves 2.3%.
TEST(OrderCells, APlanForTheLanesPacksTheBenchCellsAtTheLowerBound) {
  const std::vector<double> d = {2.10, 0.56, 1.19, 1.06, 1.06, 2.34, 2.19, 2.73, 0.72, 0.72, 1.55,
                                 0.57, 1.05, 1.76, 1.76, 0.57, 1.00, 2.12, 1.86, 1.86, 1.05, 1.97,
                                 2.52, 0.52, 0.52, 2.51, 2.25, 1.35, 0.89, 0.89, 2.89, 1.34};
  double sum = 0;
  for (double x : d) sum += x;
  const double bound = std::max(sum / 8, *std::max_element(d.begin(), d.end()));
  std::vector<CellEstimate> cells;
  for (size_t i = 0; i < d.size(); ++i) cells.push_back({100 + i, d[i]});
  auto positions = [](const std::vector<size_t>& order) {  // back to indices into d
    std::vector<size_t> out;
    for (size_t c : order) out.push_back(c - 100);
    return out;
  };
  const auto planned = positions(order_cells(cells, 8));
  std::vector<size_t> sorted = planned;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(sorted[i], i);                // each cell once
  EXPECT_GT(list_makespan(d, positions(order_cells(cells)), 8), 1.02 * bound);  // longest first
  EXPECT_LT(list_makespan(d, planned, 8), 1.005 * bound);
}

// Longest first puts 3 | 3 and then the three 2s 2 | 2 | 2 onto alternate lanes: 7. The plan
// splits the lanes anew, 3 3 | 2 2 2: 6, and starts each lane's cells one after the other.
TEST(PlanLanes, FindsTheEvenSplitThatLongestFirstMisses) {
  const std::vector<double> d = {3, 3, 2, 2, 2};
  EXPECT_EQ(list_makespan(d, order_cells({{0, 3.0}, {1, 3.0}, {2, 2.0}, {3, 2.0}, {4, 2.0}}), 2),
            7);
  const auto plan = plan_lanes(d, 2);
  ASSERT_EQ(plan.size(), 2u);
  std::vector<double> loads;
  for (const auto& lane : plan) {
    double t = 0;
    for (size_t i : lane) t += d[i];
    loads.push_back(t);
  }
  EXPECT_EQ(loads[0], 6);
  EXPECT_EQ(loads[1], 6);
  const auto order = order_cells({{0, 3.0}, {1, 3.0}, {2, 2.0}, {3, 2.0}, {4, 2.0}}, 2);
  EXPECT_EQ(list_makespan(d, order, 2), 6);
}

// Many cells per lane (more than every split can be tried for): moves and swaps, never worse
// than longest first, each cell once, on random durations.
TEST(PlanLanes, ManyCellsAreNeverPackedWorseThanLongestFirst) {
  unsigned seed = 7;
  auto next = [&seed] {
    seed = seed * 1103515245u + 12345u;
    return 0.1 + static_cast<double>((seed >> 8) % 10000) / 1000.0;
  };
  for (int lanes : {2, 3, 5, 8}) {
    std::vector<double> d;
    std::vector<CellEstimate> cells;
    for (size_t i = 0; i < 60; ++i) {
      d.push_back(next());
      cells.push_back({i, d.back()});
    }
    auto order = order_cells(cells, lanes);
    auto sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(sorted[i], i);
    EXPECT_LE(list_makespan(d, order, lanes), list_makespan(d, order_cells(cells), lanes) + 1e-9)
        << lanes << " lanes";
  }
}

// A cell of unknown length may be the longest: no plan, the unknown ones first as before; and
// with as many lanes as cells every cell starts at once, longest first.
TEST(OrderCells, NoPlanWithAnUnknownDurationOrALaneForEveryCell) {
  std::vector<CellEstimate> cells = {{0, 1.0}, {1, {}}, {2, 5.0}, {3, 1.0}, {4, {}}, {5, 3.0}};
  EXPECT_EQ(order_cells(cells, 2), (std::vector<size_t>{1, 4, 2, 5, 0, 3}));
  std::vector<CellEstimate> known = {{0, 1.0}, {1, 4.0}, {2, 2.0}};
  EXPECT_EQ(order_cells(known, 3), (std::vector<size_t>{1, 2, 0}));
}

// The packing bench's 32 durations (bench/harness.py, seed 42), in cell order; in its mixed
// case every 4th cell holds 2 GPUs.
const std::vector<double> kBench = {
    2.10, 0.56, 1.19, 1.06, 2.34, 2.19, 2.73, 0.72, 1.55, 0.57, 1.05, 1.76, 0.57, 1.00, 2.12, 1.86,
    1.05, 1.97, 2.52, 0.52, 2.51, 2.25, 1.35, 0.89, 2.89, 1.34, 0.73, 0.74, 2.62, 2.01, 2.52, 2.32};

double shared_bound(const std::vector<double>& d, const std::vector<int>& w, int gpus) {
  double area = 0, longest = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    area += d[i] * w[i];
    longest = std::max(longest, d[i]);
  }
  return std::max(area / gpus, longest);
}

std::vector<size_t> identity(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(SharedMakespan, OneGpuCellsGiveWhatLanesGive) {
  std::vector<int> ones(kBench.size(), 1);
  for (int gpus : {1, 3, 8})
    EXPECT_NEAR(shared_makespan(identity(kBench.size()), kBench, ones, gpus, gpus),
                list_makespan(kBench, identity(kBench.size()), gpus), 1e-9)
        << gpus;
  // --parallel below the GPUs: the lanes are the limit.
  EXPECT_NEAR(shared_makespan(identity(kBench.size()), kBench, ones, 8, 3),
              list_makespan(kBench, identity(kBench.size()), 3), 1e-9);
}

// 2 GPUs: cell 0 (1 GPU, 1 s) and cell 2 (1 GPU, 3 s) start; cell 1 (2 GPUs) does not fit and
// does not hold cell 2 back; it starts when both GPUs are free at 3 s, and ends at 5.
TEST(SharedMakespan, AWideCellWaitsWithoutHoldingBackNarrowOnes) {
  EXPECT_DOUBLE_EQ(shared_makespan({0, 1, 2}, {1, 2, 3}, {1, 2, 1}, 2, 8), 5.0);
  // A cell wider than the GPUs counts as all of them, rather than never starting.
  EXPECT_DOUBLE_EQ(shared_makespan({0, 1}, {1, 1}, {1, 4}, 2, 8), 2.0);
}

// The bench's mixed case (every 4th cell on 2 GPUs) on 8 GPUs: longest first is 1.026 x the
// lower bound; the plan comes within 1% of it.
TEST(PlanShared, PacksTheBenchMixedCellsNearTheLowerBound) {
  std::vector<int> w;
  for (size_t i = 0; i < kBench.size(); ++i) w.push_back(i % 4 == 3 ? 2 : 1);
  const double bound = shared_bound(kBench, w, 8);
  std::vector<CellEstimate> cells;
  for (size_t i = 0; i < kBench.size(); ++i) cells.push_back({i, kBench[i], w[i]});
  const auto longest = order_cells(cells, 8);  // no GPUs given: longest first
  EXPECT_GT(shared_makespan(longest, kBench, w, 8, 8), 1.02 * bound);
  const auto planned = order_cells(cells, 8, 8);
  auto sorted = planned;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity(kBench.size()));  // each cell once
  EXPECT_LT(shared_makespan(planned, kBench, w, 8, 8), 1.01 * bound);
}

// Random widths and durations: never worse than longest first, each cell once; and above 64
// cells (no swaps tried) still no worse.
TEST(PlanShared, NeverWorseThanLongestFirst) {
  unsigned seed = 11;
  auto next = [&seed](unsigned mod) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % mod;
  };
  for (size_t n : {5, 20, 40, 90}) {
    std::vector<double> d;
    std::vector<int> w;
    std::vector<CellEstimate> cells;
    for (size_t i = 0; i < n; ++i) {
      d.push_back(0.1 + static_cast<double>(next(5000)) / 1000.0);
      w.push_back(1 << next(3));  // 1, 2 or 4
      cells.push_back({i, d.back(), w.back()});
    }
    const auto planned = plan_shared(d, w, 8, 8);
    auto sorted = planned;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, identity(n));
    EXPECT_LE(shared_makespan(planned, d, w, 8, 8),
              shared_makespan(order_cells(cells), d, w, 8, 8) + 1e-9)
        << n << " cells";
  }
}

// Mixed widths with a duration unknown, or without the GPUs the cells share: longest first,
// unknown ones first, as for cells of one width.
TEST(OrderCells, MixedWidthsWithoutEveryDurationOrTheGpusAreNotPlanned) {
  std::vector<CellEstimate> cells = {{0, 1.0, 1}, {1, {}, 2}, {2, 5.0, 2}, {3, 3.0, 1}};
  EXPECT_EQ(order_cells(cells, 8, 8), (std::vector<size_t>{1, 2, 3, 0}));
  cells[1].seconds = 0.5;
  EXPECT_EQ(order_cells(cells, 8, 0), (std::vector<size_t>{2, 3, 0, 1}));
}

JobRecord attempt(JobState state, double start, double end) {
  JobRecord j;
  j.state = state;
  j.started_at = start;
  j.ended_at = end;
  return j;
}

TEST(MeasuredDuration, OnlyAttemptsThatRanToTheirOwnEnd) {
  EXPECT_EQ(measured_duration(attempt(JobState::kCompleted, 10, 12.5)), 2.5);
  EXPECT_EQ(measured_duration(attempt(JobState::kFailed, 10, 11)), 1.0);
  EXPECT_EQ(measured_duration(attempt(JobState::kTimeout, 10, 70)), 60.0);
  for (JobState s : {JobState::kCancelled, JobState::kStopped, JobState::kBudget,
                     JobState::kCostCap, JobState::kLost, JobState::kRunning})
    EXPECT_FALSE(measured_duration(attempt(s, 10, 12)));
  JobRecord never = attempt(JobState::kCompleted, 10, 12);
  never.started_at.reset();
  EXPECT_FALSE(measured_duration(never));
  EXPECT_FALSE(measured_duration(attempt(JobState::kCompleted, 10, 9)));  // clock stepped back
}

class TempStore {
 public:
  TempStore() : store(store::Store::open(dir_.db())) {}
  int64_t sweep(const std::vector<std::string>& argv, const std::string& backend = "local") {
    store::SweepRecord s;
    s.name = "s";
    s.argv = argv;
    s.backend = backend;
    s.created_at = 1;
    return store->insert_sweep(s);
  }
  void cell(int64_t sweep_id, int index, const std::string& arg, JobState state, double secs,
            int gpus = 0) {
    JobRecord j = attempt(state, 100, 100 + secs);
    j.argv = {"train", arg};
    if (gpus > 0) {
      j.gpu_type = "H100";
      j.gpu_count = gpus;
      j.cell_key = arg + ":" + std::to_string(gpus);
    }
    j.sweep_id = sweep_id;
    j.cell_index = index;
    if (j.cell_key.empty()) j.cell_key = arg;
    store->insert_job(j);
  }

 private:
  testing::TempDir dir_;  // declared first: the store closes before its folder goes

 public:
  std::unique_ptr<store::Store> store;
};

TEST(KnownDurations, FromEarlierSweepsOfTheSameCommandNewestFirst) {
  TempStore t;
  const std::vector<std::string> tmpl = {"train", "{i}"};
  int64_t old_sweep = t.sweep(tmpl);
  t.cell(old_sweep, 0, "0", JobState::kCompleted, 9);
  t.cell(old_sweep, 1, "1", JobState::kCompleted, 4);
  int64_t other = t.sweep({"eval", "{i}"});
  t.cell(other, 2, "2", JobState::kCompleted, 7);  // same resolved argv shape, other template
  int64_t slurm = t.sweep(tmpl, "slurm");
  t.cell(slurm, 3, "3", JobState::kCompleted, 8);  // another backend: another machine
  int64_t newer = t.sweep(tmpl);
  t.cell(newer, 0, "0", JobState::kCompleted, 2);  // the newest measurement wins
  t.cell(newer, 1, "1", JobState::kCancelled, 1);  // says nothing: the older 4 s stays
  auto known = known_durations(*t.store, tmpl, "local", std::nullopt);
  EXPECT_EQ(known.size(), 2u);
  EXPECT_EQ((known[{{"train", "0"}, "", 0}]), 2.0);
  EXPECT_EQ((known[{{"train", "1"}, "", 0}]), 4.0);
}

TEST(KnownDurations, AResumedSweepUsesItsOwnAttemptsFirst) {
  TempStore t;
  const std::vector<std::string> tmpl = {"train", "{i}"};
  int64_t resumed = t.sweep(tmpl);
  t.cell(resumed, 0, "0", JobState::kFailed, 3);
  int64_t later = t.sweep(tmpl);
  t.cell(later, 0, "0", JobState::kCompleted, 30);
  t.cell(later, 1, "1", JobState::kCompleted, 5);
  auto known = known_durations(*t.store, tmpl, "local", resumed);
  EXPECT_EQ((known[{{"train", "0"}, "", 0}]), 3.0);
  EXPECT_EQ((known[{{"train", "1"}, "", 0}]), 5.0);
}

// The same command on 1 and on 2 GPUs (sweep --gpu H100:{gpus}) runs for different times.
TEST(KnownDurations, EachGpuCountOfTheSameCommandHasItsOwn) {
  TempStore t;
  const std::vector<std::string> tmpl = {"train", "{i}"};
  int64_t id = t.sweep(tmpl);
  t.cell(id, 0, "0", JobState::kCompleted, 9, 1);
  t.cell(id, 1, "0", JobState::kCompleted, 5, 2);
  auto known = known_durations(*t.store, tmpl, "local", std::nullopt);
  EXPECT_EQ(known.size(), 2u);
  EXPECT_EQ((known[{{"train", "0"}, "H100", 1}]), 9.0);
  EXPECT_EQ((known[{{"train", "0"}, "H100", 2}]), 5.0);
}

}  // namespace
}  // namespace nodus::engine
