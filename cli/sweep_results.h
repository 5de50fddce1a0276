#pragma once
// A sweep's cells as the comparison table and the report see them: every cell of its grid,
// with the newest attempt's numbers and stats, or "not run" for cells that never started.

#include <vector>

#include "store/store.h"
#include "sweep/compare.h"

namespace nodus::cli {

struct SweepResults {
  std::vector<sweep::CellResult> cells;
  std::vector<std::optional<JobRecord>> jobs;  // beside cells; empty for cells never run
  double total_cost = 0;
  int stopped_early = 0;  // cells --stop-early stopped
  double saved_usd = 0;   // what finishing them would have cost, by their estimate
};

SweepResults load_sweep_results(store::Store& store, const store::SweepRecord& sweep);

}  // namespace nodus::cli
