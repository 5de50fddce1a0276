#pragma once
// Bringing the store's active jobs up to date with the world: a job whose supervisor died
// without recording its end is settled here, by whichever nodus command looks next (ps, show,
// stop, cost, sweeps).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace nodus::engine {

// How long reconcile waits for a killed cgroup to empty (a process in the kernel, state D, can
// take a moment); past it the note names the cgroup as still holding processes.
inline constexpr std::chrono::milliseconds kOrphanKillLimit{2000};
// How many of the newest jobs are looked at for an empty cgroup left behind.
inline constexpr int kStaleCgroupJobs = 50;

// Local jobs whose supervisor is dead: a cgroup that still holds processes (the supervisor and
// the sentinel both died, e.g. kill -9 of both) is killed (cgroup.kill, waiting until empty) and
// removed, with a note saying so; then the job becomes lost, billed to its last heartbeat and
// never past its cap (store::Store::reconcile_dead_supervisors). Empty cgroups that the newest
// ended jobs of this store left behind are removed. Jobs on a cluster whose supervisor is gone are
// asked about through their backend (a detached Slurm run finishes without anyone watching) and
// their GPUs freed once final.
// Also local jobs whose supervisor lives but is stopped (SIGSTOP: what a job attacking nodus
// does) while the job's cgroup still runs past its deadline (job_deadline): ended by force_end,
// recorded as tampered. And the cgroup of an ended job that still holds processes while its
// supervisor is gone (a sweep cell that killed its sentinel and its supervisor) is killed.
void reconcile(store::Store& store);

// The unix time by which a job's own limits end it: its stop plan's SIGKILL (billing/stop_plan.h:
// the earlier of its --timeout plus grace and the moment its cap is spent); nullopt without a
// start or a limit.
std::optional<double> job_deadline(const JobRecord& job);

// Ends a local job whose supervisor lives but does not act (stopped, stuck): SIGKILLs the
// supervisor and its sentinel (a stopped sentinel would be left behind), kills the job's cgroup,
// and records `state` with `why` in the note, ended at `ended_at` (the sentinel's kill, when it
// killed the tree) or now, and billed for all of it: what ran, even past the cap, with the
// overrun said. Returns the record as stored.
JobRecord force_end(store::Store& store, JobRecord job, JobState state, const std::string& why,
                    std::optional<double> ended_at = std::nullopt);

// A sweep killed while a cell ran leaves that cell's supervisor stopping it on its own (its
// PR_SET_PDEATHSIG is a SIGTERM: TERM, the grace, KILL, then the bill). Until it has recorded the
// end, the store holds less than the cell cost, so a resume that read the budget then would
// spend the difference twice. Waits until no cell of the sweep has a live supervisor, or until
// the largest grace among them plus `slack` has passed; returns the ids of the cells still
// active with a live supervisor then (empty: the store's spend is final).
std::vector<int64_t> wait_for_sweep_cells(store::Store& store, int64_t sweep_id,
                                          std::chrono::milliseconds slack);

}  // namespace nodus::engine
