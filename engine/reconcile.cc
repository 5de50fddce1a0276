#include "engine/reconcile.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "backend/backend.h"
#include "backend/local/cgroup.h"
#include "backend/local/container.h"
#include "billing/stop_plan.h"
#include "core/cost.h"
#include "core/lifecycle.h"
#include "core/parse.h"
#include "core/proc.h"
#include "engine/supervisor.h"

namespace nodus::engine {
namespace {

using backend::local::cgroup_from_note;
using backend::local::cgroup_kill_path;
using backend::local::cgroup_populated_path;
using backend::local::cgroup_wait_empty_path;

bool exists(const std::string& path) { return !path.empty() && ::access(path.c_str(), F_OK) == 0; }

// Removes a job's empty cgroup. A job run with --image has podman's cgroups below it (and, on a
// hybrid host, beside it in every v1 hierarchy: backend/local/container.h), which its supervisor
// removes when it ends the job; when that supervisor was killed, they go here, children first.
void remove_container_cgroups(const JobRecord& job, const std::string& cgroup) {
  if (job.image.empty()) return;
  auto mountinfo = read_small_file("/proc/self/mountinfo");
  auto mount = mountinfo ? cgroup2_mount(*mountinfo) : std::nullopt;
  if (!mount || cgroup.rfind(*mount + "/", 0) != 0) return;
  backend::local::remove_container_cgroups(cgroup.substr(mount->size()));
}

void remove_cgroup(const JobRecord& job, const std::string& cgroup) {
  remove_container_cgroups(job, cgroup);
  // With any the job made below it; fails harmlessly if a process joined meanwhile.
  (void)backend::local::cgroup_remove_path(cgroup);
}

// cgroup.kill, waiting until it is empty, then removes it. False when processes were still
// there after kOrphanKillLimit (the folder is then left).
bool kill_cgroup(const JobRecord& job, const std::string& cgroup) {
  cgroup_kill_path(cgroup);
  if (!cgroup_wait_empty_path(cgroup, kOrphanKillLimit)) return false;
  remove_cgroup(job, cgroup);
  return true;
}

// The job's cgroup outlived both of its enforcers: nothing else will ever stop it. Returns the
// note to record.
std::string kill_orphan(const JobRecord& job, const std::string& cgroup) {
  if (!kill_cgroup(job, cgroup))
    return "its supervisor was gone and its cgroup " + cgroup +
           " still held processes; cgroup.kill sent, some still there after " +
           std::to_string(kOrphanKillLimit.count()) + " ms";
  return "its supervisor was gone but its cgroup still ran: killed (cgroup.kill) when found";
}

// The cgroups of this store's recent local jobs that ended while their supervisor is gone. An
// empty one was left behind (a sentinel that killed the tree and died before removing it, or a
// supervisor killed after its job's tree ended): removed. One that still holds processes has
// nobody left to stop it (a sweep cell whose job killed its sentinel and its supervisor is
// recorded by the sweep, but its processes live on): killed, and billed until then. Only this
// store's jobs: another NODUS_HOME's jobs may share the cgroup folder, and a live supervisor
// still reads its cgroup's cpu.stat after the tree is empty.
void settle_ended_cgroups(store::Store& store) {
  store::JobFilter recent;
  recent.limit = kStaleCgroupJobs;
  for (JobRecord& job : store.jobs(recent)) {
    if (job.backend != "local" || !is_final(job.state)) continue;
    const std::string cgroup = cgroup_from_note(job.note);
    if (cgroup.empty() || (job.image.empty() && !exists(cgroup))) continue;
    if (store::process_alive(job.supervisor_pid, job.supervisor_start)) continue;
    if (!exists(cgroup)) {
      // Removed by its sentinel, but podman's folders in the v1 hierarchies may be left.
      remove_container_cgroups(job, cgroup);
      continue;
    }
    if (!cgroup_populated_path(cgroup)) {
      remove_cgroup(job, cgroup);
      continue;
    }
    const double found = unix_now();
    std::string why = kill_orphan(job, cgroup);
    // It ran until now: bill all of it, whatever the record said before.
    if (job.started_at && job.ended_at && found > *job.ended_at) {
      job.cost = cost_usd(job.gpu_count, job.rate_per_gpu_hour, found - *job.started_at);
      job.ended_at = found;
      why += "; billed to then";
    }
    job.note = job.note.empty() ? why : job.note + "; " + why;
    store.update_job(job);
  }
}

// Active jobs whose supervisor lives but is stopped. While their cgroup runs past the deadline,
// the sentinel that would have ended them is gone too (it kills the job once the supervisor has
// been stopped for a moment), so only this command is left to do it. Once their tree is dead
// (the sentinel killed it at the deadline or for the stopped supervisor), nothing records the
// end until the supervisor runs again, which may be never: the record ends here, billed to the
// sentinel's kill, and `ps` stops showing a dead job running with a growing bill.
void end_stopped_supervisors(store::Store& store, const std::vector<JobRecord>& active) {
  const double now = unix_now();
  for (const JobRecord& job : active) {
    if (job.backend != "local") continue;
    if (!store::process_alive(job.supervisor_pid, job.supervisor_start)) continue;
    if (!process_stopped(static_cast<pid_t>(job.supervisor_pid))) continue;
    const std::string who = "its supervisor (pid " + std::to_string(job.supervisor_pid) + ")";
    const std::string cgroup = cgroup_from_note(job.note);
    if (exists(cgroup) && cgroup_populated_path(cgroup)) {
      auto deadline = job_deadline(job);
      if (!deadline || now < *deadline) continue;
      force_end(store, job, JobState::kTampered,
                "tampering: " + who +
                    " was stopped and its sentinel gone while the job ran past its deadline; "
                    "killed by the next nodus command");
      continue;
    }
    // The sentinel's word that it killed the tree (with a cgroup or without one).
    const std::optional<double> killed = read_sentinel_end(job.log_path);
    if (!killed) continue;
    auto deadline = job_deadline(job);
    const bool at_deadline = deadline && *killed >= *deadline;
    force_end(store, job, JobState::kTampered,
              "tampering: " + who + " was stopped while the job ran; its sentinel killed the job " +
                  (at_deadline ? "at its deadline" : "for the stopped supervisor") +
                  ", ended by the next nodus command and billed to the kill",
              killed);
  }
}

// The job as the store has it now, when its supervisor is gone and it has not ended; nullopt
// otherwise. `job` was read before the supervisor was looked at: one that recorded its job's end
// and exited in between is dead now, its final row already in, and must not be taken for a job
// nobody supervises (it would be killed, billed to now or refreshed over its final row).
std::optional<JobRecord> unsupervised(store::Store& store, const JobRecord& job) {
  if (store::process_alive(job.supervisor_pid, job.supervisor_start)) return std::nullopt;
  auto now = store.job(job.id);
  if (!now || is_final(now->state)) return std::nullopt;
  return now;
}

void reconcile_local_cgroups(store::Store& store, const std::vector<JobRecord>& active) {
  struct Killed {
    int64_t id;
    std::string note;
    double at;  // when it was killed: it ran until then
  };
  std::vector<Killed> killed;
  for (const JobRecord& listed : active) {
    if (listed.backend != "local" || cgroup_from_note(listed.note).empty()) continue;
    auto job = unsupervised(store, listed);
    if (!job) continue;
    const std::string cgroup = cgroup_from_note(job->note);
    // A live sentinel kills the tree itself on its supervisor's death; doing the same here is
    // harmless (cgroup.kill is idempotent) and covers the sentinel being gone too.
    if (exists(cgroup) && cgroup_populated_path(cgroup))
      killed.push_back({job->id, kill_orphan(*job, cgroup), unix_now()});
    else if (exists(cgroup))
      remove_cgroup(*job, cgroup);
  }
  store.reconcile_dead_supervisors();  // lost, billed to the heartbeat, never past the cap
  for (const Killed& k : killed) {
    auto job = store.job(k.id);
    if (!job) continue;
    std::string note = k.note;
    // Its processes ran until they were killed just now, whatever its last heartbeat says:
    // the bill is for all of that, past the cap if it came to that.
    if (job->started_at && k.at > job->ended_at.value_or(0)) {
      job->ended_at = k.at;
      job->cost = cost_usd(job->gpu_count, job->rate_per_gpu_hour, k.at - *job->started_at);
      note += "; billed to then";
      if (auto cap = effective_cap(job->max_cost, budget_cap_of(*job)); cap && job->cost > *cap)
        note += " (" + format_usd(job->cost - *cap) + " past its cap)";
    }
    job->note = job->note.empty() ? note : job->note + "; " + note;
    store.update_job(*job);
  }
  settle_ended_cgroups(store);
}

}  // namespace

std::optional<double> job_deadline(const JobRecord& job) {
  if (!job.started_at) return std::nullopt;
  auto plan = billing::plan_stop(job);
  if (!plan) return std::nullopt;
  return *job.started_at + plan->kill_after.count();
}

namespace {

// The sentinels of a supervisor about to be killed: its children that name themselves
// nodus-sentinel. One that is stopped too (a job that stopped both) would stay so forever; one
// that runs would exit once its supervisor is gone anyway. Found before the supervisor dies,
// while they are still its children.
std::vector<pid_t> sentinels_of(pid_t supervisor) {
  std::vector<pid_t> out;
  for (const ProcStat& p : scan_processes())
    if (p.ppid == supervisor && p.comm == "nodus-sentinel") out.push_back(p.pid);
  return out;
}

}  // namespace

JobRecord force_end(store::Store& store, JobRecord job, JobState state, const std::string& why,
                    std::optional<double> ended_at) {
  const auto pid = static_cast<pid_t>(job.supervisor_pid);
  if (store::process_alive(job.supervisor_pid, job.supervisor_start)) {
    for (pid_t sentinel : sentinels_of(pid)) ::kill(sentinel, SIGKILL);
    ::kill(pid, SIGKILL);  // a stopped process dies of SIGKILL too
    for (int i = 0; i < 200 && store::process_alive(job.supervisor_pid, job.supervisor_start); ++i)
      ::usleep(10'000);
  }
  std::string note = why;
  const std::string cgroup = cgroup_from_note(job.note);
  if (exists(cgroup) && !kill_cgroup(job, cgroup))
    note += "; cgroup " + cgroup + " still held processes " +
            std::to_string(kOrphanKillLimit.count()) + " ms after cgroup.kill";
  const double now = ended_at ? std::min(*ended_at, unix_now()) : unix_now();
  if (job.started_at) {
    job.cost = cost_usd(job.gpu_count, job.rate_per_gpu_hour, std::max(0.0, now - *job.started_at));
    if (auto cap = effective_cap(job.max_cost, budget_cap_of(job)); cap && job.cost > *cap)
      note += "; billed " + format_usd(job.cost) + " for all it ran, " +
              format_usd(job.cost - *cap) + " past its cap";
  }
  end_job(job, {state, now, std::nullopt, note});
  store.update_job(job);
  store.release_gpus(job.id);
  return job;
}

void reconcile(store::Store& store) {
  std::vector<JobRecord> active = store.active_jobs();
  end_stopped_supervisors(store, active);
  active = store.active_jobs();
  reconcile_local_cgroups(store, active);
  std::unique_ptr<backend::Backend> slurm;
  for (const JobRecord& listed : active) {
    if (listed.backend == "local") continue;
    auto found = unsupervised(store, listed);
    if (!found) continue;
    JobRecord& job = *found;
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
