#include "engine/reconcile.h"

#include <memory>

#include "backend/backend.h"

namespace nodus::engine {

void reconcile(store::Store& store) {
  store.reconcile_dead_supervisors();
  std::unique_ptr<backend::Backend> slurm;
  for (auto& job : store.active_jobs()) {
    if (job.backend == "local") continue;
    if (store::process_alive(job.supervisor_pid, job.supervisor_start)) continue;
    if (!slurm) slurm = backend::make_backend(job.backend);
    auto changed = slurm->refresh(job);
    if (changed.ok() && *changed) {
      store.update_job(job);
      if (is_final(job.state)) store.release_gpus(job.id);
    }
  }
}

}  // namespace nodus::engine
