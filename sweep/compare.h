#pragma once
// The per-cell comparison `nodus sweep` prints when its cells have run: one row per cell with
// what it cost, how long it took, how much work it did, and how busy its GPUs were; the best
// cell marked, and one sentence comparing it with the slowest.
//
// Columns: CELL, one per param, STATUS, WALL, COST, THROUGHPUT, $/M SAMPLES, DATA WAIT, then
// UTIL %, IDLE $ and VERDICT when any cell has them. JSON and CSV carry raw numbers under
// snake_case keys: cell, <param name>, status, wall_s, cost_usd, throughput,
// usd_per_million_samples, data_wait, util_mean, idle_usd, verdict; JSON rows also hold
// params (an object), exit_code, gpu_seconds and best. A param whose name is one of those keys
// gets the column key param_<name>.
//
// The best cell is the completed cell with a throughput that does the most samples per dollar
// (throughput x wall / cost); ties go to the higher throughput, then the lower index.

#include <optional>
#include <string>
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
  std::optional<double> data_wait;   // fraction 0..1 of loop time spent waiting for batches
  std::optional<double> util_mean;   // percent
  std::optional<double> idle_usd;    // money that bought idle GPU time
  std::optional<std::string> verdict;
};

// cost / (throughput x wall_s) x 1e6; empty without a positive throughput and wall time.
std::optional<double> usd_per_million_samples(const CellResult& cell);

// Position in cells of the best cell, if any cell qualifies.
std::optional<size_t> best_cell(const std::vector<CellResult>& cells);

// "num_workers=14: 8.1x the throughput of num_workers=0 at 0.12x the cost per sample": the best
// cell against the slowest other completed cell with a throughput, naming only the params that
// differ. "" when there are not two such cells.
std::string summary_sentence(const std::vector<CellResult>& cells);

struct CompareOptions {
  // A column key; "" keeps cell order. Descending for throughput, ascending otherwise; empty
  // values last; ties by cell index.
  std::string sort;
};

// The table, rows sorted and the best cell marked. Fails on an unknown --sort key, listing
// the keys there are.
Result<Table> compare_table(const std::vector<CellResult>& cells, const CompareOptions& options);

}  // namespace nodus::sweep
