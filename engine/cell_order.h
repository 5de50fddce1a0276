#pragma once
// In which order a sweep's pending cells are offered to the scheduler. In grid order a long
// cell that comes last runs alone at the end while the other GPUs idle; when the durations are
// known (a resumed sweep, or a repeat of an earlier sweep of the same command) starting the
// longest first (LPT, Graham 1969) packs the cells to within 4/3 of the optimal makespan, and
// usually within a few percent of the lower bound max(GPU-seconds / GPUs, longest cell).
//
// order_cells is pure: the sweep runner calls it once, before it hands the pending cells to
// SweepScheduler, which then starts them in that order as GPUs free up.

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
std::vector<size_t> order_cells(const std::vector<CellEstimate>& cells, int lanes = 1);

// The plan: longest first onto the least loaded lane (LPT), then, while it shortens the longest
// lane, the cells of a more and a less loaded lane split anew between the two: every split when
// they hold few cells (at most 14), else the best single move or swap. Returns each lane's
// cells (indices into `seconds`), longest first within a lane.
std::vector<std::vector<size_t>> plan_lanes(const std::vector<double>& seconds, int lanes);

// How long an ended attempt ran, when that says how long the cell takes: it completed, failed
// or hit its timeout by itself. A cell stopped by a person, a cap or a budget, or lost, says
// nothing about its length: nullopt.
std::optional<double> measured_duration(const JobRecord& attempt);

// Durations known from the store for cells of `argv_template` (resolved argv -> seconds): the
// sweep's own earlier attempts when it is resumed (sweep_id), then the newest of the last
// `look_back` sweeps of the same template on the same backend. The newest measurement wins.
std::map<std::vector<std::string>, double> known_durations(
    store::Store& store, const std::vector<std::string>& argv_template, const std::string& backend,
    std::optional<int64_t> sweep_id, int look_back = 20);

}  // namespace nodus::engine
