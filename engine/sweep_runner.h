#pragma once
// SweepRunner runs a sweep's cells as jobs, each under a supervisor process of its own
// (`nodus __supervise`), packing them onto free GPUs as they free up, within --parallel and
// --budget. Ctrl-C stops the running cells and keeps every finished one.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/result.h"
#include "engine/budget.h"
#include "engine/job_builder.h"
#include "engine/planned_cell.h"
#include "engine/supervisor_process.h"
#include "store/store.h"

namespace nodus::engine {

class SignalWatch;
class SweepProgress;

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
  // Waiting for GPUs that another process holds, the sweep wakes when a GPU lock file changes
  // (store::GpuReleaseWatch) and also looks again this often (a holder that died releases
  // nothing). Tests set it long: a start after a release must then come from the wake.
  std::chrono::milliseconds gpu_recheck{250};
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
