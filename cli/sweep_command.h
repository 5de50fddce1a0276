#pragma once
// The sweep command's piece other commands need: the detached sweep's supervisor (run by
// `nodus __supervise` for a ticket with a sweep id). Where its log is and the exit code a
// sweep's final state maps to are engine/sweep_session.h's.

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

}  // namespace nodus::cli
