#include "sweep/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace nodus::sweep {
namespace {

// The shape measured on one H200 (ResNet-18, bf16, batch 256, 70 steps): samples/s and data-wait
// share per num_workers, billed at $2.60 per GPU-hour, 20 s of start-up per cell.
std::vector<CellResult> h200_sweep() {
  struct Row {
    int workers;
    double throughput, data_wait;
  };
  const Row rows[] = {
      {0, 1038, 0.95}, {2, 1503, 0.93}, {4, 2741, 0.83}, {8, 4953, 0.72}, {14, 8400, 0.24}};
  std::vector<CellResult> cells;
  for (const auto& r : rows) {
    CellResult c;
    c.index = static_cast<int>(cells.size());
    c.params = {{"num_workers", std::to_string(r.workers)}};
    c.state = "completed";
    c.exit_code = 0;
    c.wall_s = 70 * 256 / r.throughput + 20;
    c.gpu_seconds = c.wall_s;
    c.cost = c.gpu_seconds * 2.60 / 3600;
    c.throughput = r.throughput;
    c.data_wait = r.data_wait;
    cells.push_back(c);
  }
  CellResult failed;
  failed.index = 5;
  failed.params = {{"num_workers", "16"}};
  failed.state = "failed";
  failed.exit_code = 1;
  failed.wall_s = 3.2;
  failed.gpu_seconds = 3.2;
  failed.cost = 3.2 * 2.60 / 3600;
  cells.push_back(failed);
  return cells;
}

// Two params, with GPU utilization, idle money and verdicts from telemetry.
std::vector<CellResult> two_param_sweep() {
  std::vector<CellResult> cells;
  const char* models[] = {"small", "resnet18"};
  for (int m = 0; m < 2; ++m) {
    for (int w = 0; w < 2; ++w) {
      CellResult c;
      c.index = m * 2 + w;
      c.params = {{"model", models[m]}, {"num_workers", w ? "4" : "0"}};
      c.state = "completed";
      c.exit_code = 0;
      c.wall_s = 100 + 50 * m - 40 * w;
      c.gpu_seconds = 8 * c.wall_s;
      c.cost = c.gpu_seconds * 2.60 / 3600;
      c.throughput = (w ? 3000.0 : 1200.0) / (m + 1);
      c.data_wait = w ? 0.05 : 0.6;
      c.util_mean = w ? 91 : 38;
      c.idle_usd = c.cost * (1 - *c.util_mean / 100);
      c.verdict = w ? "ok" : "data-bound";
      cells.push_back(c);
    }
  }
  cells[3].state = "timeout";
  cells[3].exit_code = 124;
  cells[3].throughput.reset();
  cells[3].util_mean.reset();
  cells[3].verdict.reset();
  return cells;
}

// Compares with tests/data/sweep/<name>; NODUS_UPDATE_GOLDEN=1 rewrites the file instead.
void expect_golden(const std::string& name, const std::string& actual) {
  std::string path = std::string(NODUS_TEST_DATA) + "/sweep/" + name;
  if (std::getenv("NODUS_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden file " << path;
}

Table table_of(const std::vector<CellResult>& cells, const std::string& sort = "") {
  CompareOptions options;
  options.sort = sort;
  auto t = compare_table(cells, options);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? std::move(*t) : Table({});
}

TEST(SweepCompare, GoldenTable) {
  expect_golden("h200.txt", table_of(h200_sweep()).render(Format::kTable));
}
TEST(SweepCompare, GoldenJson) {
  expect_golden("h200.json", table_of(h200_sweep()).render(Format::kJson));
}
TEST(SweepCompare, GoldenCsv) {
  expect_golden("h200.csv", table_of(h200_sweep()).render(Format::kCsv));
}
TEST(SweepCompare, GoldenMarkdown) {
  expect_golden("h200.md", table_of(h200_sweep()).render(Format::kMd));
}
TEST(SweepCompare, GoldenTableWithTelemetryColumns) {
  expect_golden("two-params.txt", table_of(two_param_sweep()).render(Format::kTable));
  expect_golden("two-params.csv", table_of(two_param_sweep()).render(Format::kCsv));
}

TEST(SweepCompare, TelemetryColumnsAlwaysInJsonAndCsvShownInTheTableWhenSomeCellHasThem) {
  auto t = table_of(h200_sweep());
  std::vector<std::string> keys;
  for (const auto& col : t.columns()) keys.push_back(col.key);
  for (const char* key : {"util_mean", "idle_usd", "verdict", "slowest_rank"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
    EXPECT_TRUE(t.raw_rows()[0][key].is_null()) << key;  // no samples: null, never missing
  }
  EXPECT_EQ(t.render(Format::kTable).find("VERDICT"), std::string::npos);
  EXPECT_NE(t.render(Format::kCsv).find("verdict"), std::string::npos);
  auto cells = h200_sweep();
  cells[2].verdict = "data-bound";
  cells[2].util_mean = 40;
  EXPECT_NE(table_of(cells).render(Format::kTable).find("VERDICT"), std::string::npos);
  EXPECT_EQ(table_of(cells).raw(0)["verdict"], nullptr);
  EXPECT_DOUBLE_EQ(table_of(cells).raw(2)["util_mean"].get<double>(), 0.40);  // a fraction
  EXPECT_EQ(t.render(Format::kTable).find("SLOWEST RANK"), std::string::npos);
  cells[1].slowest_rank = "rank 1 (dev2)";
  EXPECT_NE(table_of(cells).render(Format::kTable).find("SLOWEST RANK"), std::string::npos);
  EXPECT_NE(table_of(cells).render(Format::kTable).find("rank 1 (dev2)"), std::string::npos);
  EXPECT_EQ(table_of(cells).raw(1)["slowest_rank"], "rank 1 (dev2)");
  EXPECT_EQ(table_of(cells).raw(0)["slowest_rank"], nullptr);
}

TEST(SweepCompare, UsdPerMillionSamplesFollowsFromCostThroughputAndWall) {
  CellResult c;
  c.cost = 2.0;
  c.wall_s = 100;
  c.throughput = 1000;
  EXPECT_DOUBLE_EQ(*usd_per_million_samples(c), 2.0 / (1000 * 100) * 1e6);
  c.throughput.reset();
  EXPECT_FALSE(usd_per_million_samples(c).has_value());
}

TEST(SweepCompare, JsonHasRawNumbersAndParamsObject) {
  auto t = table_of(h200_sweep());
  const auto& row = t.raw(4);
  EXPECT_EQ(row["params"], nlohmann::json({{"num_workers", 14}}));
  EXPECT_EQ(row["num_workers"], 14);
  EXPECT_EQ(row["throughput"], 8400.0);
  EXPECT_EQ(row["best"], true);
  EXPECT_TRUE(row["cost_usd"].is_number_float());
  EXPECT_EQ(t.raw(5)["throughput"], nullptr);
  EXPECT_EQ(t.raw(5)["exit_code"], 1);
}

TEST(SweepCompare, BestCellHasTheBestObjective) {
  auto cells = h200_sweep();
  EXPECT_EQ(best_cell(cells), 4u);  // throughput:max by default
  // With cost_per_msample:min, cheaper per sample beats faster: make the fastest cell cost
  // three times as much per second.
  cells[4].cost *= 3;
  Objective per_sample{"cost_per_msample", false};
  EXPECT_EQ(best_cell(cells, per_sample), 3u);
  EXPECT_EQ(best_cell(cells), 4u);
  // Only completed cells with a value qualify.
  cells[3].state = "timeout";
  cells[2].throughput.reset();
  EXPECT_EQ(best_cell(cells, per_sample), 4u);
  EXPECT_FALSE(best_cell({}).has_value());
}

TEST(SweepObjective, ParsesNamesAndDirectionsAndRefusesToGuess) {
  EXPECT_EQ(parse_objective("")->text(), "throughput:max");
  EXPECT_EQ(parse_objective("val_acc:max")->text(), "val_acc:max");
  EXPECT_EQ(parse_objective("loss:min")->text(), "loss:min");
  EXPECT_EQ(parse_objective("wall")->text(), "wall:min");
  EXPECT_EQ(parse_objective("cost_per_msample")->text(), "cost_per_msample:min");
  EXPECT_NE(parse_objective("loss").error().message.find("loss:min"), std::string::npos);
  EXPECT_NE(parse_objective("loss:down").error().message.find("max or min"), std::string::npos);
  EXPECT_FALSE(parse_objective("a b:max").ok());
  EXPECT_FALSE(parse_objective(":max").ok());
}

TEST(SweepObjective, RanksByAReportedMetric) {
  auto cells = h200_sweep();
  const double acc[] = {0.91, 0.72, 0.80, 0.60, 0.5};
  for (int i = 0; i < 5; ++i) cells[i].metrics["val_acc"] = acc[i];
  EXPECT_EQ(best_cell(cells, {"val_acc", true}), 0u);
  EXPECT_EQ(best_cell(cells, {"val_acc", false}), 4u);
  EXPECT_EQ(summary_sentence(cells, {"val_acc", true}),
            "num_workers=0: the best val_acc:max (0.91; runner-up num_workers=4: 0.8)");
  auto t = compare_table(cells, {"val_acc", {"val_acc", true}, {}});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->raw(0)["cell"], 0);  // sorted best first
  EXPECT_EQ(t->raw(0)["val_acc"], 0.91);
  EXPECT_EQ(t->raw(5)["val_acc"], nullptr);  // the failed cell reported nothing
}

TEST(SweepObjective, ColumnsChoosesAndOrdersColumns) {
  auto cells = h200_sweep();
  cells[0].metrics["loss"] = 1.5;
  auto t = compare_table(cells, {"", {}, {"loss", "throughput"}});
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->columns().size(), 3u);
  EXPECT_EQ(t->columns()[0].key, "cell");
  EXPECT_EQ(t->columns()[1].key, "loss");
  EXPECT_EQ(t->columns()[2].key, "throughput");
  EXPECT_EQ(t->render(Format::kCsv).substr(0, 36), "cell,loss,throughput,schema_version\n");
  auto bad = compare_table(cells, {"", {}, {"nope"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--columns: unknown column 'nope'"), std::string::npos);
}

// Two cells measured three times each.
std::vector<CellResult> repeated(std::vector<double> a, std::vector<double> b) {
  std::vector<CellResult> cells;
  for (int i = 0; i < 2; ++i) {
    const auto& runs = i == 0 ? a : b;
    CellResult c;
    c.index = i + 1;
    c.params = {{"w", std::to_string(i)}};
    c.state = "completed";
    c.wall_s = 10;
    c.cost = 0;
    double sum = 0;
    for (double v : runs) sum += v;
    c.throughput = sum / static_cast<double>(runs.size());
    c.runs = static_cast<int>(runs.size());
    c.samples["throughput"] = runs;
    cells.push_back(c);
  }
  return cells;
}

TEST(SweepCompare, WelchMatchesAReferenceValue) {
  // Welch on [1..5] vs [2,4,..,10]: t = -1.8974, df = 5.882; p = 0.10753 by integrating the
  // Student t density numerically (Simpson, 200000 steps), independently of Boost.
  auto w = welch_test({1, 2, 3, 4, 5}, {2, 4, 6, 8, 10});
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(w->t, -1.8974, 1e-3);
  EXPECT_NEAR(w->df, 5.882, 1e-2);
  EXPECT_NEAR(w->p, 0.10753, 1e-4);
  EXPECT_FALSE(welch_test({1}, {2, 3}).has_value());
  EXPECT_EQ(welch_test({2, 2}, {2, 2})->p, 1);
  EXPECT_EQ(welch_test({2, 2}, {3, 3})->p, 0);
}

TEST(SweepCompare, RepeatsThatOverlapAreATieAndNoCellIsNamedBest) {
  auto cells = repeated({495, 470, 480}, {488, 478, 466});
  EXPECT_FALSE(best_cell(cells).has_value());
  std::string s = summary_sentence(cells);
  EXPECT_EQ(s.rfind("no best cell: w=0 and w=1 are not distinguishable on throughput", 0), 0u) << s;
  EXPECT_NE(s.find("Welch's t-test p = "), std::string::npos) << s;
  auto t = compare_table(cells, {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->render(Format::kTable).find("\n*"), std::string::npos);
  EXPECT_NE(t->render(Format::kTable).find("482 ± 12.6"), std::string::npos)
      << t->render(Format::kTable);
  EXPECT_NEAR(t->raw(0)["throughput_sd"].get<double>(), 12.58, 0.01);
}

// Money reads as money in the sentence and the table: a cost objective's mean and spread in
// dollars (it read "0.08544 ± 0.009181"), and a spread too small for cents is not "$0.0000".
TEST(SweepCompare, CostFiguresAndTheirSpreadReadAsDollars) {
  auto cells = repeated({480, 482, 481}, {479, 483, 480});
  cells[0].cost = 0.0024;
  cells[0].samples["cost_usd"] = {0.00240, 0.00241, 0.00239};
  cells[1].cost = 0.0024;
  cells[1].samples["cost_usd"] = {0.00241, 0.00240, 0.00240};
  std::string s = summary_sentence(cells, Objective{"cost", false});
  EXPECT_NE(s.find("($0.0024 ± $0.00001"), std::string::npos) << s;
  auto t = compare_table(cells, {});
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t->render(Format::kTable).find("$0.0024 ± $0.00001"), std::string::npos)
      << t->render(Format::kTable);
}

TEST(SweepCompare, RepeatsThatDifferClearlyNameTheBestWithTheTest) {
  auto cells = repeated({495, 497, 494}, {386, 388, 385});
  EXPECT_EQ(best_cell(cells), 0u);
  std::string s = summary_sentence(cells);
  EXPECT_NE(s.find("w=0: 1.3x the throughput of the runner-up w=1"), std::string::npos) << s;
  EXPECT_NE(s.find("Welch's t-test p < 0.001 over 3 runs each"), std::string::npos) << s;
}

TEST(SweepCompare, SingleRunsWithinTheMarginAreATie) {
  auto cells = repeated({387}, {386});
  EXPECT_FALSE(best_cell(cells).has_value());
  EXPECT_EQ(summary_sentence(cells),
            "no best cell: w=0 and w=1 are not distinguishable on throughput (387 vs 386, within "
            "5% with one run each); --repeat 3 tells a difference from noise");
  // Today's 1.0x/1.0x case: equal throughput and cost.
  auto same = repeated({500}, {500});
  EXPECT_FALSE(best_cell(same).has_value());
  EXPECT_EQ(summary_sentence(same).rfind("no best cell", 0), 0u);
}

TEST(SweepCompare, BestCellOfFreeRunsIsTheFastest) {
  auto cells = h200_sweep();
  for (auto& c : cells) c.cost = 0;  // local CPU runs bill nothing
  EXPECT_EQ(best_cell(cells), 4u);
  EXPECT_EQ(summary_sentence(cells),
            "num_workers=14: 1.7x the throughput of the runner-up num_workers=8");
}

TEST(SweepCompare, BestRowIsMarkedWhereverItIsSorted) {
  for (std::string sort : {"", "throughput", "cost_usd", "cell"}) {
    auto t = table_of(h200_sweep(), sort);
    std::istringstream lines(t.render(Format::kTable));
    std::string line;
    std::getline(lines, line);  // header
    for (size_t row = 0; std::getline(lines, line); ++row) {
      bool best = t.raw(row)["cell"] == 4;
      EXPECT_EQ(line[0] == '*', best) << sort << ": " << line;
      EXPECT_EQ(t.raw(row)["best"], best);
    }
  }
}

// Issue 29 point 2: the best against the runner-up (it was against the slowest: 8.1x where the
// runner-up was 1.7x behind).
TEST(SweepCompare, SummaryComparesBestWithTheRunnerUp) {
  EXPECT_EQ(summary_sentence(h200_sweep()),
            "num_workers=14: 1.7x the throughput of the runner-up num_workers=8 at 0.59x the cost "
            "per sample");
}

// A cell is named by every param that varies in the sweep: two cells never read the same (it
// was "num_workers=4" for model=small num_workers=4 while model=resnet18 num_workers=4 existed).
TEST(SweepCompare, SummaryNamesCellsByEveryParamThatVaries) {
  EXPECT_EQ(summary_sentence(two_param_sweep()),
            "model=small num_workers=4: 2.5x the throughput of the runner-up model=small "
            "num_workers=0 at 0.4x the cost per sample");
  EXPECT_EQ(summary_sentence(two_param_sweep(), {"cost", false})
                .rfind("model=small num_workers=4: the best cost:min (", 0),
            0u)
      << summary_sentence(two_param_sweep(), {"cost", false});
  EXPECT_NE(summary_sentence(two_param_sweep(), {"cost", false})
                .find("; runner-up model=small num_workers=0: "),
            std::string::npos);
}

// Issue 29 point 5: a cell that never ran shows no time and no cost ("0ms $0.00" read as a run
// that cost nothing).
TEST(SweepCompare, ACellThatNeverRanShowsNoTimeOrCost) {
  auto cells = h200_sweep();
  cells[5] = CellResult{};
  cells[5].index = 5;
  cells[5].params = {{"num_workers", "16"}};
  cells[5].state = "not run";
  auto t = compare_table(cells, {});
  ASSERT_TRUE(t.ok());
  std::string table = t->render(Format::kTable);
  std::string row = table.substr(table.find("not run"));
  row = row.substr(0, row.find('\n'));
  EXPECT_EQ(row.find("0ms"), std::string::npos) << row;
  EXPECT_EQ(row.find("$0.00"), std::string::npos) << row;
}

// Issue 29 point 2: cells whose rates are warm-up's are marked and never ranked by a rate.
TEST(SweepCompare, WarmUpOnlyCellsAreMarkedAndNotRanked) {
  auto cells = h200_sweep();
  for (auto& c : cells) c.unsteady = "still in warm-up at the end";
  EXPECT_FALSE(best_cell(cells).has_value());
  std::string s = summary_sentence(cells);
  EXPECT_EQ(s.rfind("no best cell: not compared on throughput: num_workers=0, num_workers=2, "
                    "num_workers=4, num_workers=8, num_workers=14 (still in warm-up at the end): "
                    "their figures include the warm-up; run more steps or a shorter --warmup",
                    0),
            0u)
      << s;
  auto t = compare_table(cells, {});
  ASSERT_TRUE(t.ok());
  std::string table = t->render(Format::kTable);
  EXPECT_NE(table.find("completed (warm-up only)"), std::string::npos) << table;
  EXPECT_EQ(table.find("\n*"), std::string::npos) << table;
  EXPECT_EQ(t->raw(0)["steady"], false);
  EXPECT_EQ(t->raw(5)["steady"], nullptr);  // the failed cell
  // Wall time and cost are whole-job figures: still ranked.
  EXPECT_EQ(best_cell(cells, {"wall", false}), 4u);

  // One steady cell among warm-up ones is not "the best": nothing was compared with it.
  cells[1].unsteady.clear();
  EXPECT_FALSE(best_cell(cells).has_value());
  EXPECT_EQ(summary_sentence(cells).rfind(
                "no best cell: only num_workers=2 reached its steady state; not compared on "
                "throughput: num_workers=0, num_workers=4, ",
                0),
            0u)
      << summary_sentence(cells);
  // Two steady cells are compared; the others are named as left out.
  cells[3].unsteady.clear();
  EXPECT_EQ(best_cell(cells), 3u);
  EXPECT_EQ(summary_sentence(cells).rfind(
                "num_workers=8: 3.3x the throughput of the runner-up num_workers=2 at ", 0),
            0u)
      << summary_sentence(cells);
  EXPECT_NE(summary_sentence(cells).find("; not compared on throughput: num_workers=0, "
                                         "num_workers=4, num_workers=14 (still in warm-up"),
            std::string::npos)
      << summary_sentence(cells);
}

TEST(SweepCompare, NoSummaryWithFewerThanTwoComparableCells) {
  auto cells = h200_sweep();
  for (size_t i = 1; i < cells.size(); ++i) cells[i].state = "failed";
  EXPECT_EQ(summary_sentence(cells), "");
  EXPECT_EQ(summary_sentence({}), "");
}

std::vector<int> order(const Table& t) {
  std::vector<int> out;
  for (size_t r = 0; r < t.size(); ++r) out.push_back(t.raw(r)["cell"].get<int>());
  return out;
}

TEST(SweepCompare, SortThroughputDescendingWithMissingLast) {
  EXPECT_EQ(order(table_of(h200_sweep(), "throughput")), (std::vector<int>{4, 3, 2, 1, 0, 5}));
}

TEST(SweepCompare, SortOtherColumnsAscending) {
  EXPECT_EQ(order(table_of(h200_sweep(), "cost_usd")), (std::vector<int>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(order(table_of(h200_sweep(), "usd_per_million_samples")),
            (std::vector<int>{4, 3, 2, 1, 0, 5}));
  EXPECT_EQ(order(table_of(h200_sweep(), "status")), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(SweepCompare, SortByParamComparesNumbersAsNumbers) {
  auto cells = h200_sweep();
  std::swap(cells[0].params, cells[5].params);  // 16 first, 0 last
  EXPECT_EQ(order(table_of(cells, "num_workers")), (std::vector<int>{5, 1, 2, 3, 4, 0}));
}

TEST(SweepCompare, SortTiesKeepCellOrder) {
  auto cells = two_param_sweep();
  EXPECT_EQ(order(table_of(cells, "data_wait")), (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(order(table_of(cells, "model")), (std::vector<int>{2, 3, 0, 1}));
}

TEST(SweepCompare, UnknownSortColumnListsKeys) {
  CompareOptions options;
  options.sort = "speed";
  auto t = compare_table(h200_sweep(), options);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message,
            "--sort: unknown column 'speed': expected one of cell, num_workers, status, job_id, "
            "wall_s, cost_usd, throughput, usd_per_million_samples, data_wait, util_mean, mfu, "
            "idle_usd, verdict, slowest_rank, throughput_metric, gpu_seconds, exit_code, steady, "
            "best");
}

TEST(SweepCompare, ParamNamedLikeAColumnGetsAPrefixedKey) {
  auto cells = h200_sweep();
  for (auto& c : cells) c.params[0].name = "status";
  auto t = table_of(cells);
  EXPECT_EQ(t.columns()[1].key, "param_status");
  EXPECT_EQ(t.columns()[1].header, "status");
  EXPECT_EQ(t.raw(0)["status"], "completed");
  EXPECT_EQ(t.raw(0)["param_status"], 0);
}

// The smallest-that-works rule for num_workers (issue 33): the seed's "keep the smallest value
// that drives the data-wait share near zero", beside the fastest cell.
std::vector<CellResult> workers_sweep(std::vector<std::pair<int, std::pair<double, double>>> rows) {
  std::vector<CellResult> cells;
  for (const auto& [workers, figures] : rows) {
    CellResult c;
    c.index = static_cast<int>(cells.size()) + 1;
    c.params = {{"w", std::to_string(workers)}};
    c.state = "completed";
    c.throughput = figures.first;
    c.data_wait = figures.second;
    c.loader_workers = workers;
    cells.push_back(c);
  }
  return cells;
}

TEST(WorkersSentence, NamesTheSmallestWorkersUnderTheLineAndWhatMoreBuy) {
  auto cells =
      workers_sweep({{0, {1000, 0.60}}, {4, {2400, 0.06}}, {8, {2460, 0.01}}, {16, {2470, 0.01}}});
  EXPECT_EQ(workers_sentence(cells),
            "loader: w=4 (num_workers=4, data wait 6%) is the smallest num_workers whose data "
            "wait is 10% or less; the fastest, w=16 (num_workers=16, data wait 1%), has 1.03x "
            "its throughput for 12 more workers, within the 5% one run can vary: the extra "
            "workers buy nothing measured");
  cells[3].throughput = 3000;  // more workers that do buy throughput: said without the caveat
  EXPECT_EQ(workers_sentence(cells).find("within"), std::string::npos) << workers_sentence(cells);
  EXPECT_NE(workers_sentence(cells).find("1.25x its throughput for 12 more workers"),
            std::string::npos)
      << workers_sentence(cells);
}

TEST(WorkersSentence, TheSmallestThatIsAlsoTheFastestIsSaidOnce) {
  auto cells = workers_sweep({{0, {1000, 0.5}}, {2, {2000, 0.02}}, {4, {1900, 0.01}}});
  EXPECT_EQ(workers_sentence(cells),
            "loader: w=2 (num_workers=2, data wait 2%) is the smallest num_workers whose data "
            "wait is 10% or less, and the fastest");
}

TEST(WorkersSentence, NoneUnderTheLineSaysTheLoaderIsStillTheBottleneck) {
  auto cells = workers_sweep({{0, {1000, 0.9}}, {2, {1500, 0.5}}, {4, {1800, 0.3}}});
  EXPECT_EQ(workers_sentence(cells),
            "loader: no num_workers tried brought the data wait to 10% or less; the lowest, w=4 "
            "(num_workers=4, data wait 30%), still waits on its loader: try more workers, or a "
            "cheaper transform");
}

TEST(WorkersSentence, SaysNothingWhereTheCellsDifferInMoreThanWorkers) {
  auto cells = workers_sweep({{0, {1000, 0.6}}, {4, {2000, 0.05}}});
  EXPECT_FALSE(workers_sentence(cells).empty());
  auto two_axes = workers_sweep({{0, {1000, 0.6}}, {4, {2000, 0.05}}, {4, {2100, 0.04}}});
  EXPECT_EQ(workers_sentence(two_axes), "");  // two cells with 4 workers: another axis varies
  auto unmeasured = cells;
  unmeasured[1].loader_workers.reset();  // no hook figures: not judged
  EXPECT_EQ(workers_sentence(unmeasured), "");
  auto warm = cells;
  warm[1].unsteady = "still in warm-up at the end";
  EXPECT_EQ(workers_sentence(warm), "");
  auto failed = cells;
  failed[1].state = "failed";
  EXPECT_EQ(workers_sentence(failed), "");
}

}  // namespace
}  // namespace nodus::sweep
