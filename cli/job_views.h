#pragma once
// How jobs look in listings: the `ps` table, and the fields `show` prints.

#include <vector>

#include "core/job.h"
#include "core/table.h"
#include "core/table_fields.h"
#include "store/store.h"

namespace nodus::cli {

// The `ps` listing's columns (core/table_fields.h), fed a row at a time (feed_row).
const std::vector<Field<JobRecord>>& job_fields();
nlohmann::json job_json(const JobRecord& job);  // the stable JSON form of a job
// A job's stored stats in the json units of docs/output.md (fractions 0-1, cores).
nlohmann::json stats_json(const nlohmann::json& stored);
std::string gpu_label(const JobRecord& job);  // "2 x H100-SXM [0,1]" or "-"
double wall_seconds(const JobRecord& job);    // start to end (or now), 0 if never started
// What the job has cost so far: its bill once ended; while it runs, its wall time at its rate. A
// job back in the queue (a Slurm job requeued after it ran) holds no GPU: its figure is what its
// runs so far cost (the backend's refresh bills them), not a clock running over queue time.
double live_cost(const JobRecord& job);
// What a sweep has cost so far: every attempt of every cell (Store::sweep_spent), its running
// cells at live_cost (their rows hold their bill only once they end). `cells`: the sweep's
// newest attempts, as Store::sweep_cells gives them.
double sweep_spent_now(store::Store& store, int64_t sweep_id, const std::vector<JobRecord>& cells);
// "13.8s", "975ms": format_duration of seconds, a moment already past as 0.
std::string duration_text(double seconds);

// The limit that stops the job first, as it will be carried out (billing/stop_plan.h): "cap
// $0.0035 at 13.8s, 10.0s grace" (SIGTERM goes out the grace before the cap), "timeout 1m00s,
// then 10.0s grace"; nullopt when nothing stops it.
struct StopMoments {
  std::string limit;
  double term_s = 0, kill_s = 0;  // since the job started
};
std::optional<StopMoments> stop_moments(const JobRecord& job);
// The next thing the caps will do, for a live view: "SIGTERM in 3.7s (cap $0.0035 at 13.8s,
// 10.0s grace)", "SIGKILL in 9.1s (...)", or "" when nothing is due.
std::string countdown_text(const JobRecord& job, double elapsed);
// For `show` of a job its limit stopped (timeout, cost-cap, budget) or will stop: when SIGTERM
// and SIGKILL went out (or are due) and what the job had cost at each; "" for other jobs.
std::string stop_text(const JobRecord& job);
// The line `run` ends with: "job 3 failed (exit 2) after 1.2s, cost $0.0100; its output: nodus
// logs 3": the outcome, the time, the cost (and a billing note), and the one thing to do next.
// How the job was placed and contained stays in `show`.
std::string end_of_job_line(const JobRecord& job);

}  // namespace nodus::cli
