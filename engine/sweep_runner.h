#pragma once
// SweepRunner runs a sweep's cells as jobs, each under a supervisor process of its own
// (`nodus __supervise`), packing them onto free GPUs as they free up, within --parallel and
// --budget. Ctrl-C stops the running cells and keeps every finished one.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/result.h"
#include "engine/budget.h"
#include "engine/job_builder.h"
#include "engine/supervisor_process.h"
#include "store/store.h"

namespace nodus::engine {

class SignalWatch;
class SweepProgress;

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

struct SweepSettings {
  int parallel = 1;
  std::optional<double> budget;
  const Inventory* inventory = nullptr;  // local backend with GPUs
  // --stop-early FACTOR (engine/sweep_losers.h): the cells' throughput metric and warm-up.
  std::optional<double> stop_early;
  std::string throughput_metric = "samples_per_sec";
  double warmup_s = 5;
  // Starts a cell's supervisor process; empty: spawn_supervisor (`nodus __supervise`).
  // tests/engine fork one that supervises the cell through a FakeBackend.
  std::function<Result<SpawnedSupervisor>(const Ticket&)> spawn;
};

class SweepRunner {
 public:
  SweepRunner(store::Store& store, SignalWatch& signals, SweepProgress& progress)
      : store_(store), signals_(signals), progress_(progress) {}

  // Runs every cell not done. Returns the sweep's final state: completed, failed (some cell
  // did not complete), budget (cells skipped for the budget) or interrupted.
  std::string run(store::SweepRecord& sweep, std::vector<PlannedCell>& cells,
                  const SweepSettings& settings);

 private:
  store::Store& store_;
  SignalWatch& signals_;
  SweepProgress& progress_;
};

// The default --parallel: as many cells as the free GPUs allow (CPU-only cells: one at a time,
// a training job uses every core; Slurm: every cell, the cluster queues them).
int default_parallel(const JobRecord& cell, const Inventory* inventory);

}  // namespace nodus::engine
