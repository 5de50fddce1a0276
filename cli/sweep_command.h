#pragma once
// The sweep command's pieces other commands need: the detached sweep's supervisor (run by
// `nodus __supervise` for a ticket with a sweep id), where a detached sweep's log is, and the
// exit code a sweep's final state maps to (`nodus wait`).

#include <functional>
#include <string>

#include "engine/supervisor_process.h"
#include "store/store.h"

namespace nodus::cli {

// Plans the sweep from its stored definition (the ticket carries the unredacted --env) and
// runs it, writing its events to sweep_log_path. `status` gets "running" once the sweep's row
// names this process its supervisor, or "error CODE MESSAGE". Returns the sweep's exit code.
int supervise_sweep(const engine::Ticket& ticket,
                    const std::function<void(const std::string&)>& status);

std::string sweep_log_path(store::Store& store, int64_t sweep_id);

// 0 completed, 130 interrupted, 122 budget, 1 failed (a cell did not complete).
int sweep_exit_code(const std::string& state);

}  // namespace nodus::cli
