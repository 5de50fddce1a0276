#pragma once
// Bringing the store's active jobs up to date with the world: a job whose supervisor died
// without recording its end is settled here, by whichever nodus command looks next (ps, show,
// stop, cost, sweeps).

#include "store/store.h"

namespace nodus::engine {

// Local jobs whose supervisor is dead become lost, billed to its last heartbeat and never past
// their cap (store::Store::reconcile_dead_supervisors); jobs on a cluster whose supervisor is
// gone are asked about through their backend (a detached Slurm run finishes without anyone
// watching), and their GPUs freed once final.
void reconcile(store::Store& store);

}  // namespace nodus::engine
