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
// "; GPU 0 is held by job 4 of the store /home/b/.local/share/nodus/nodus.db (pid 812)": the
// GPUs of `type` that another store's job holds (the machine-wide locks, store/gpu_locks.h),
// which this store's `ps` cannot show; "" when none.
std::string held_by_other_stores(const store::Store& store, const std::string& type,
                                 const Inventory& inventory);

Acquired acquire_gpus(store::Store& store, JobRecord& job, const Inventory& inventory, bool no_wait,
                      SignalWatch* signals, bool attach);

// Records and stores the end of a job whose GPUs never came (`why` is not kClaimed): busy under
// --no-wait, failed with exit 125; or `signal` while it waited, which ends it as it ends a
// running job (state_for_signal): cancelled, exit 130, or stopped, exit 143.
void end_unstarted(store::Store& store, JobRecord& job, Acquired why, int signal);

}  // namespace nodus::engine
