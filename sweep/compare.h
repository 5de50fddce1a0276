#pragma once
// The per-cell comparison `nodus sweep` prints when its cells have run: one row per cell with
// what it cost, how long it took, how much work it did, and how busy its GPUs were; the best
// cell marked, and one sentence comparing it with the slowest.
//
// Columns: CELL, one per param, STATUS ("completed (warm-up only)" for a cell whose rates are
// from its warm-up), WALL, COST, THROUGHPUT, $/M SAMPLES, DATA WAIT (TOKENS/S and $/M TOKENS
// when every cell's throughput counts tokens), then
// UTIL %, MFU %, IDLE $, VERDICT and SLOWEST RANK when any cell has them. JSON and CSV carry raw
// numbers under snake_case keys: cell, <param name>, status, wall_s, cost_usd, throughput,
// usd_per_million_samples (per million tokens when the throughput counts tokens), data_wait,
// util_mean, mfu (0..1), idle_usd, verdict, slowest_rank; JSON rows also hold params (an object),
// exit_code, gpu_seconds, throughput_metric (samples_per_sec, tokens_per_sec or the --throughput
// metric; null without a throughput), steady (false: the rates are warm-up's) and best. A param
// whose name is one of those keys gets the column key param_<name>.
//
// Every metric the job reported (its last value) is a column too, keyed by its name (metric_<name>
// when that clashes with a fixed key or a param), and JOB (key job_id) is the cell's newest job.
// A cell run N times (--repeat) shows the mean of its runs, "mean ± sd" in tables, with
// <key>_sd beside each figure and runs, job_ids in JSON/CSV.
//
// The best cell is the completed cell with the best objective (--objective NAME[:max|min],
// default throughput:max; ties go to the lower index), and only when it is distinguishable from
// the runner-up: with repeats, Welch's t-test (two-sided, p < 0.05); with one run each, more than
// kSingleRunMargin apart. Otherwise no cell is named best (a tie).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/table.h"
#include "sweep/grid.h"

namespace nodus::sweep {

struct CellResult {
  int index = 0;
  std::vector<Param> params;  // in axis order
  std::string state;          // to_string(JobState): "completed", "failed", "timeout", ...
  std::optional<int> exit_code;
  double wall_s = 0;
  double gpu_seconds = 0;
  double cost = 0;                   // USD
  std::optional<double> throughput;  // steady samples/s (or the --throughput metric)
  // What throughput counts: "tokens_per_sec" for a model fed token ids (the hook's), else the
  // --throughput metric ("" is samples_per_sec).
  std::string throughput_metric;
  std::optional<double> data_wait;    // fraction 0..1 of loop time spent waiting for batches
  std::optional<int> loader_workers;  // the driving DataLoader's num_workers, as the hook saw it
  std::optional<double> util_mean;    // percent
  std::optional<double> mfu;          // model FLOPs utilization, 0..1 (engine/measure.h)
  std::optional<double> idle_usd;     // money that bought idle GPU time
  std::optional<std::string> verdict;
  // Of several ranks, the one the others wait for, "rank 1 (dev2)" (engine/measure.h
  // slowest_rank); nullopt with one rank or none that lags.
  std::optional<std::string> slowest_rank;
  // Why the cell's rates (throughput, $/M samples, data wait) are not its steady state's, e.g.
  // "still in warm-up at the end"; "" when they are (or the phases are unknown). Such a cell is
  // marked and not ranked by a rate.
  std::string unsteady;
  std::map<std::string, double> metrics;  // what the job reported (last value; mean over runs)
  int runs = 1;                           // --repeat: how many runs the figures are means of
  // Per-run values by column key (throughput, wall_s, cost_usd, usd_per_million_samples, and
  // metric:<name>), filled when runs > 1.
  std::map<std::string, std::vector<double>> samples;
  std::vector<int64_t> job_ids;  // every run's job, oldest first
};

// What ranks the cells. name: throughput, cost_per_msample, wall, cost, or a metric the job
// reports.
struct Objective {
  std::string name = "throughput";
  bool maximize = true;
  std::string text() const { return name + (maximize ? ":max" : ":min"); }
};
// "" is throughput:max; throughput, wall, cost and cost_per_msample have a natural direction;
// a metric needs one (loss:min), nodus does not guess.
Result<Objective> parse_objective(std::string_view text);

// With one run each, two cells closer than this (relative) are a tie: a single run's noise.
inline constexpr double kSingleRunMargin = 0.05;

// The cell's objective (mean over its runs), if it has one.
std::optional<double> objective_value(const CellResult& cell, const Objective& objective);

struct Welch {
  double t = 0, df = 0, p = 1;  // two-sided p-value
};
// Welch's unequal-variance t-test; nullopt with fewer than two values on either side.
std::optional<Welch> welch_test(const std::vector<double>& a, const std::vector<double>& b);

// How the comparison came out: the best and the runner-up by the objective, whether they are
// distinguishable, and the test behind it.
struct Ranking {
  std::optional<size_t> best;  // set only when distinguishable from the runner-up
  std::optional<size_t> top;   // the best by the objective's mean, tie or not
  std::optional<size_t> runner_up;
  bool tie = false;
  std::optional<Welch> welch;
};
Ranking rank_cells(const std::vector<CellResult>& cells, const Objective& objective);

// cost / (throughput x wall_s) x 1e6; empty without a positive throughput and wall time.
std::optional<double> usd_per_million_samples(const CellResult& cell);

// Position in cells of the best cell, if any cell qualifies.
std::optional<size_t> best_cell(const std::vector<CellResult>& cells,
                                const Objective& objective = {});

// "num_workers=14: 1.3x the throughput of the runner-up num_workers=8 at 0.78x the cost per
// sample": the best cell against the runner-up, each named by every param that varies in the
// sweep. "" when there are not two such cells.
// On a tie it says so and names no best cell ("no best cell: ... are not distinguishable ...").
// Cells whose rates are from warm-up (CellResult::unsteady) are not ranked by a rate objective
// (throughput, cost_per_msample): the sentence names them and what to change, and when fewer
// than two cells are left it names no best cell.
std::string summary_sentence(const std::vector<CellResult>& cells, const Objective& objective = {});

// The data wait at or under which the loader no longer holds the loop back: "near zero" in the
// fix it names ("keep the smallest num_workers that drives the data-wait share near zero").
inline constexpr double kLoaderWaitLine = 0.10;

// In a sweep whose cells differ in their DataLoader's num_workers and in nothing else (each
// completed, steady cell its own num_workers, as the hook measured it): the smallest num_workers
// whose data wait is at most kLoaderWaitLine, beside the fastest cell and what its extra workers
// buy; when none gets there, the cell with the lowest wait and that the loader is still the
// bottleneck. "" when the sweep is not such a sweep.
std::string workers_sentence(const std::vector<CellResult>& cells);

struct CompareOptions {
  // A column key; "" keeps cell order. Descending for throughput, ascending otherwise; empty
  // values last; ties by cell index.
  std::string sort;
  Objective objective;
  std::vector<std::string> columns;  // keys to show, in this order ("" : all)
};

// The table, rows sorted and the best cell marked. Fails on an unknown --sort key, listing
// the keys there are.
Result<Table> compare_table(const std::vector<CellResult>& cells, const CompareOptions& options);

}  // namespace nodus::sweep
