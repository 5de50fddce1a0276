#pragma once
// Claiming a job's GPUs on this machine, waiting while other jobs hold them.

#include "core/job.h"
#include "engine/job_builder.h"
#include "store/store.h"

namespace nodus::engine {

class SignalWatch;

enum class Acquired { kClaimed, kBusy, kInterrupted };

// Claims job.gpu_count GPUs of job.gpu_type for the calling process (the owner whose death
// frees them). Busy: waits, saying so once on stderr when `attach`, re-trying every 250 ms,
// unless no_wait. A signal on `signals` ends the wait (kInterrupted). On kClaimed the row holds
// the indices and state starting.
Acquired acquire_gpus(store::Store& store, JobRecord& job, const Inventory& inventory, bool no_wait,
                      SignalWatch* signals, bool attach);

}  // namespace nodus::engine
