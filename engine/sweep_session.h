#pragma once
// A sweep's session, between the command that planned it and the runner: whether a stored
// sweep can be resumed, running a planned sweep with this process as its supervisor (its row,
// its cells' names, its end), handing it to a supervisor process of its own (`sweep -d`), and
// where that process's log is and what exit code a sweep's end maps to. cli/cmd_sweep.cc parses
// the flags and plans the cells (engine/sweep_plan.h); `nodus __supervise` plans a detached
// sweep from its stored definition and runs it through run_sweep too.

#include <functional>
#include <string>
#include <vector>

#include "engine/planned_cell.h"
#include "engine/supervisor_process.h"
#include "engine/sweep_runner.h"
#include "store/store.h"

namespace nodus::engine {

// "s12", or "s12 (name)" for a named sweep.
std::string sweep_label(const store::SweepRecord& sweep);

// The sweep `--resume` names (its id, "s12", or its name), checked: known, readable, not running
// under a live supervisor, and no cell of it still being stopped (their supervisors are waited
// for up to their grace and a settle time: their bills are not in before). Throws Fatal (125).
store::SweepRecord resumable_sweep(store::Store& store, const std::string& id_or_name);

// Runs the cells not done with this process as the sweep's supervisor: writes the sweep's row
// (inserting it when new; then calls `supervised`), names the cells ("<sweep name or sN>-<cell>"),
// runs them (`live`: a table on stderr redrawn in place) and records the sweep's end. Returns its
// final state.
std::string run_sweep(store::Store& store, store::SweepRecord& sweep,
                      std::vector<PlannedCell>& cells, const SweepSettings& settings, bool live,
                      const std::function<void()>& supervised = {});

// `sweep -d`: writes the sweep's row (state starting, no supervisor yet) and hands it to `nodus
// __supervise` with `ticket` (its sweep id set here); returns once that process says it runs the
// sweep. Throws Fatal with the supervisor's error when it did not start it (the row says failed).
void detach_sweep(store::Store& store, store::SweepRecord& sweep, Ticket ticket);

// Where a detached sweep's supervisor writes what it prints (`nodus logs SWEEP`).
std::string sweep_log_path(store::Store& store, int64_t sweep_id);

// 0 completed, 130 interrupted, 143 stopped, 122 budget or cost-cap, 1 failed (a cell did not
// complete).
int sweep_exit_code(const std::string& state);

}  // namespace nodus::engine
