#include "engine/reconcile.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "backend/backend.h"
#include "backend/local/cgroup.h"

namespace nodus::engine {
namespace {

using backend::local::cgroup_from_note;
using backend::local::cgroup_kill_path;
using backend::local::cgroup_populated_path;
using backend::local::cgroup_wait_empty_path;

bool exists(const std::string& path) { return !path.empty() && ::access(path.c_str(), F_OK) == 0; }

// The job's cgroup outlived both of its enforcers: nothing else will ever stop it. Returns the
// note to record.
std::string kill_orphan(const std::string& cgroup) {
  cgroup_kill_path(cgroup);
  if (!cgroup_wait_empty_path(cgroup, kOrphanKillLimit))
    return "its supervisor was gone and its cgroup " + cgroup +
           " still held processes; cgroup.kill sent, some still there after " +
           std::to_string(kOrphanKillLimit.count()) + " ms";
  ::rmdir(cgroup.c_str());
  return "its supervisor was gone but its cgroup still ran: killed (cgroup.kill) when found";
}

// The cgroups of this store's recent local jobs that ended (their supervisor gone) and left
// their cgroup behind, empty: a sentinel that killed the tree and died before removing it, or
// a supervisor killed after its job's tree ended. Only this store's jobs: another NODUS_HOME's
// jobs may share the cgroup folder, and a live supervisor still reads its cgroup's cpu.stat
// after the tree is empty.
void remove_stale(store::Store& store) {
  store::JobFilter recent;
  recent.limit = kStaleCgroupJobs;
  for (const JobRecord& job : store.jobs(recent)) {
    if (job.backend != "local" || !is_final(job.state)) continue;
    const std::string cgroup = cgroup_from_note(job.note);
    if (!exists(cgroup) || cgroup_populated_path(cgroup)) continue;
    if (store::process_alive(job.supervisor_pid, job.supervisor_start)) continue;
    ::rmdir(cgroup.c_str());  // fails harmlessly if a process joined meanwhile
  }
}

void reconcile_local_cgroups(store::Store& store, const std::vector<JobRecord>& active) {
  std::vector<std::pair<int64_t, std::string>> killed;  // job id, note
  for (const JobRecord& job : active) {
    if (job.backend != "local") continue;
    const std::string cgroup = cgroup_from_note(job.note);
    if (cgroup.empty()) continue;
    if (store::process_alive(job.supervisor_pid, job.supervisor_start)) continue;
    // A live sentinel kills the tree itself on its supervisor's death; doing the same here is
    // harmless (cgroup.kill is idempotent) and covers the sentinel being gone too.
    if (exists(cgroup) && cgroup_populated_path(cgroup))
      killed.emplace_back(job.id, kill_orphan(cgroup));
    else if (exists(cgroup))
      ::rmdir(cgroup.c_str());
  }
  store.reconcile_dead_supervisors();  // lost, billed to the heartbeat, never past the cap
  for (const auto& [id, note] : killed) {
    auto job = store.job(id);
    if (!job) continue;
    job->note = job->note.empty() ? note : job->note + "; " + note;
    store.update_job(*job);
  }
  remove_stale(store);
}

}  // namespace

void reconcile(store::Store& store) {
  std::vector<JobRecord> active = store.active_jobs();
  reconcile_local_cgroups(store, active);
  std::unique_ptr<backend::Backend> slurm;
  for (auto& job : active) {
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

std::vector<int64_t> wait_for_sweep_cells(store::Store& store, int64_t sweep_id,
                                          std::chrono::milliseconds slack) {
  auto stopping = [&] {
    std::vector<JobRecord> live;
    for (JobRecord& job : store.sweep_cells(sweep_id))
      if (!is_final(job.state) && job.supervisor_pid > 0 &&
          store::process_alive(job.supervisor_pid, job.supervisor_start))
        live.push_back(std::move(job));
    return live;
  };
  std::vector<JobRecord> live = stopping();
  int64_t grace_ms = 0;
  for (const JobRecord& job : live) grace_ms = std::max(grace_ms, job.grace_ms);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms) + slack;
  while (!live.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    live = stopping();
  }
  std::vector<int64_t> ids;
  for (const JobRecord& job : live) ids.push_back(job.id);
  return ids;
}

}  // namespace nodus::engine
