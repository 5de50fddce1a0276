#pragma once
// A sweep's cell as planning makes it (engine/sweep_plan.h), the runner runs it
// (engine/sweep_runner.h) and progress shows it (engine/sweep_progress.h): in a header of its
// own, so that planning and progress do not include the runner.

#include <map>
#include <string>

#include "core/job.h"

namespace nodus::engine {

// One cell, ready to run: its job row as a template (argv resolved, params, cell key).
struct PlannedCell {
  int index = 0;
  std::string label;  // "num_workers=4 batch_size=128"
  JobRecord job;      // not yet inserted (id 0) unless an attempt is waiting for GPUs
  std::map<std::string, std::string> env;  // the cell's full --env plus NODUS_PARAM_*, unredacted
  // The key the cell had before NODUS_SWEEP_CELL counted from 1 (it was the 0-based grid index):
  // an attempt stored under it is the same cell, so --resume of an older sweep does not rerun it.
  std::string legacy_cell_key;
  bool done = false;           // completed in an earlier run (--resume)
  bool skipped = false;        // could not start within the budget
  bool stopped_early = false;  // --stop-early stopped it (a loser, not a failure)
};

}  // namespace nodus::engine
