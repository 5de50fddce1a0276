#pragma once
// The supervisor process of a detached job or a sweep cell: what `nodus __supervise` runs.
// Its starter (engine/supervisor_process.h) hands it a Ticket on stdin and reads one status line
// from its stdout; from then on the job's row is this process's to write.

#include <functional>
#include <string>

#include "engine/supervisor_process.h"

namespace nodus::backend {
class Backend;
}
namespace nodus::store {
class Store;
}

namespace nodus::engine {

// Runs the sweep a ticket names (`sweep -d`; cli/ owns sweep running): `status` takes the status
// line ("running" or "error CODE MESSAGE"); returns the sweep's exit code.
using SweepMain = std::function<int(const Ticket&, const std::function<void(const std::string&)>&)>;

// Reads the ticket from stdin, points stdin at /dev/null, claims the job's GPUs (saying
// "waiting" first when they are busy, unless the ticket says --no-wait), launches the job and
// supervises it to the end. The status line ("running", "waiting" or "error <code> <message>")
// goes to stdout, after which stdout points at /dev/null. A sweep cell dies with its sweep
// (PR_SET_PDEATHSIG SIGTERM, a stop like `nodus stop`). Returns the process's exit code: the
// job's, or 125 / 130 when it never started. A ticket with a sweep id is handed to `sweep`.
int supervise_main(const SweepMain& sweep);

class SignalWatch;

// The part of supervise_main after the ticket is read, in this process: the job the ticket
// names, from its row in `store`, through `backend` (nullptr: the job's own, make_backend),
// with `signals` (created before the store was opened) as its stops. `status` gets the one
// status line. tests/engine fork one of these over a FakeBackend to drive a whole sweep.
int supervise_job(const Ticket& ticket, store::Store& store, SignalWatch& signals,
                  backend::Backend* backend,
                  const std::function<void(const LaunchStatus&)>& status);

}  // namespace nodus::engine
