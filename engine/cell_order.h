#pragma once
// In which order a sweep's pending cells are offered to the scheduler. In grid order a long
// cell that comes last runs alone at the end while the other GPUs idle; when the durations are
// known (a resumed sweep, or a repeat of an earlier sweep of the same command) starting the
// longest first (LPT, Graham 1969) packs the cells to within 4/3 of the optimal makespan, and
// usually within a few percent of the lower bound max(GPU-seconds / GPUs, longest cell).
//
// order_cells is pure: the sweep runner calls it once, before it hands the pending cells to
// SweepScheduler, which then starts them in that order as GPUs free up.

#include <compare>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "store/store.h"

namespace nodus::engine {

struct CellEstimate {
  size_t cell = 0;                // the caller's index
  std::optional<double> seconds;  // how long it ran before; nullopt: unknown
  int gpus = 1;                   // how many of the sweep's GPUs it holds while it runs
};

// Cells whose duration is unknown first, in the order given (one of them may be the longest:
// starting them early hedges); then the known ones longest first, ties in the order given.
// With no duration known this is the order given.
//
// When every duration is known and `lanes` cells run at once (the sweep's --parallel), the
// order is that of a plan: the cells split into `lanes` sequences whose total lengths are as
// even as plan_lanes can make them, offered in the order of their planned starts, so that
// starting each cell as a slot frees (SweepScheduler) reproduces the plan when the durations
// hold. Longest first alone leaves 2.3% over the lower bound on the bench's 32 cells on 8 GPUs;
// the plan 0.2%.
//
// Cells that hold different numbers of GPUs (sweep --gpu H100:{gpus}) do not fit lanes: when
// every duration is known and `gpus` (the GPUs the cells share) is given, the order is the one
// plan_shared finds.
std::vector<size_t> order_cells(const std::vector<CellEstimate>& cells, int lanes = 1,
                                int gpus = 0);

// The makespan of starting the cells in `order` on `gpus` GPUs, at most `lanes` at once, as
// SweepScheduler does: whenever cells end, the first waiting cells that fit start (a cell that
// does not fit does not hold back a later one that does). A cell wider than `gpus` counts as
// `gpus` wide.
double shared_makespan(const std::vector<size_t>& order, const std::vector<double>& seconds,
                       const std::vector<int>& widths, int gpus, int lanes);

// An order for cells of different widths: the best by shared_makespan of longest first, largest
// GPU-seconds first and widest first, then, while one shortens the makespan, swaps of two
// cells' places (every pair, for sweeps of at most 64 pending cells, within a bounded number of
// evaluations).
std::vector<size_t> plan_shared(const std::vector<double>& seconds, const std::vector<int>& widths,
                                int gpus, int lanes);

// The plan: longest first onto the least loaded lane (LPT), then, while it shortens the longest
// lane, the cells of a more and a less loaded lane split anew between the two: every split when
// they hold few cells (at most 14), else the best single move or swap. Returns each lane's
// cells (indices into `seconds`), longest first within a lane.
std::vector<std::vector<size_t>> plan_lanes(const std::vector<double>& seconds, int lanes);

// How long an ended attempt ran, when that says how long the cell takes: it completed, failed
// or hit its timeout by itself. A cell stopped by a person, a cap or a budget, or lost, says
// nothing about its length: nullopt.
std::optional<double> measured_duration(const JobRecord& attempt);

// What a duration is known for: a resolved command on so many GPUs of a type (the same command
// on 1 and on 2 GPUs, sweep --gpu H100:{gpus}, runs for different times).
struct CellShape {
  std::vector<std::string> argv;
  std::string gpu_type;
  int gpu_count = 0;
  auto operator<=>(const CellShape&) const = default;
};

// Durations known from the store for cells of `argv_template` (their shape -> seconds): the
// sweep's own earlier attempts when it is resumed (sweep_id), then the newest of the last
// `look_back` sweeps of the same template on the same backend. The newest measurement wins.
std::map<CellShape, double> known_durations(store::Store& store,
                                            const std::vector<std::string>& argv_template,
                                            const std::string& backend,
                                            std::optional<int64_t> sweep_id, int look_back = 20);

}  // namespace nodus::engine
