#include "backend/slurm/job_states.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <utility>

#include "backend/slurm/job_script.h"
#include "billing/catalog.h"
#include "billing/stop_plan.h"
#include "core/error.h"

namespace nodus::backend::slurm {

Phase phase_of(std::string_view s) {
  for (std::string_view final_state :
       {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
        "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"})
    if (s == final_state) return Phase::kFinal;
  for (std::string_view queued : {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                                  "RESV_DEL_HOLD", "CONFIGURING", "POWER_UP_NODE"})
    if (s == queued) return Phase::kQueued;
  return Phase::kRunning;
}

WaitStatus decode_wait_status(int64_t raw) {
  WaitStatus w;
  int status = static_cast<int>(raw);
  if ((status & 0x7f) == 0) {
    w.exit_code = (status >> 8) & 0xff;
  } else {
    w.signal = status & 0x7f;
    w.exit_code = 128 + *w.signal;
  }
  return w;
}

Outcome outcome_of(const SlurmJob& job) {
  Outcome o;
  WaitStatus w = decode_wait_status(job.exit_code);
  o.exit_code = w.exit_code;
  o.signal = w.signal;
  if (job.state == "TIMEOUT") {
    o.exit_code = exit_code::kTimeout;
  } else if (job.state == "CANCELLED" && job.exit_code == 0) {
    o.signal = SIGTERM;  // cancelled before it ran (or before its script reported)
    o.exit_code = 128 + SIGTERM;
  } else if (job.state != "COMPLETED" && o.exit_code == 0) {
    o.exit_code = 1;  // NODE_FAIL, BOOT_FAIL, ... with no status of the script's own
  }
  o.ended_at = job.end_time > 0 ? job.end_time : unix_now();
  o.whole_seconds = job.end_time > 0;
  o.completed_by_record = job.state == "COMPLETED" && o.exit_code == 0 && !o.signal;
  o.started_at = job.start_time > 0 && job.start_time <= o.ended_at ? job.start_time : o.ended_at;
  return o;
}

JobState final_state_of(const SlurmJob& slurm, const JobRecord& job) {
  const std::string& s = slurm.state;
  if (s == "COMPLETED") return JobState::kCompleted;
  if (s == "TIMEOUT") {
    if (!stopped_by_time_limit(slurm, job).empty()) return JobState::kTimeout;
    double timeout = job.timeout_ms ? *job.timeout_ms / 1000.0 : INFINITY;
    double cap = job.max_cost && job.gpu_count > 0
                     ? billing::cap_seconds(*job.max_cost, job.gpu_count, job.rate_per_gpu_hour)
                     : INFINITY;
    return cap < timeout ? JobState::kCostCap : JobState::kTimeout;
  }
  // Stopped by its plan (billing/stop_plan.h) at or after the plan's TERM (Slurm's times are whole
  // seconds): the node's enforcer (timeout(1)'s 124 after its TERM, or its KILL), or the
  // supervisor's TERM through the signal API, which Slurm records as CANCELLED.
  if (auto plan = billing::plan_stop(job)) {
    WaitStatus w = decode_wait_status(slurm.exit_code);
    bool by_plan = s == "CANCELLED" || w.exit_code == 124 || w.signal == SIGKILL;
    if (by_plan && slurm.start_time > 0 &&
        slurm.end_time - slurm.start_time >= plan->term_after.count() - 1)
      return plan->reason;
  }
  if (s == "CANCELLED") return JobState::kStopped;
  return JobState::kFailed;
}

std::string stopped_by_time_limit(const SlurmJob& slurm, const JobRecord& job) {
  if (slurm.state != "TIMEOUT" || slurm.start_time <= 0 || slurm.end_time < slurm.start_time)
    return "";
  const double ran = slurm.end_time - slurm.start_time;
  auto plan = billing::plan_stop(job);
  // Whole seconds: a run that reached the plan's TERM may read a second short of it.
  if (plan && ran >= plan->term_after.count() - 1) return "";
  char ran_text[32];
  std::snprintf(ran_text, sizeof ran_text, "%.0f s", ran);
  std::string limit = slurm.time_limit_minutes > 0
                          ? std::to_string(slurm.time_limit_minutes) + " min"
                          : std::string("the partition's");
  std::string s = "Slurm's own time limit (" + limit + ") ended it after " + ran_text +
                  ", before nodus's deadline";
  if (auto submitted = time_limit_minutes(job)) {
    s += " (submitted with " + std::to_string(*submitted) +
         " min): the limit was lowered after submit (scontrol update)";
  } else {
    s += ": the job had none, so the cluster's limit applied";
  }
  return s;
}

std::vector<RunSegment> run_segments(const std::vector<SlurmJob>& accounted,
                                     const SlurmJob* current, double now) {
  std::vector<RunSegment> runs;
  auto add = [&](double start, double end) {
    if (start <= 0) return;
    runs.push_back({start, std::max(start, end)});
  };
  // A queued record (requeued, waiting to run again) holds no run of its own; its start_time
  // may still be the last run's, which accounting already has.
  if (current != nullptr &&
      (current->start_time <= 0 || phase_of(current->state) == Phase::kQueued))
    current = nullptr;
  // Slurm's times are whole seconds: the run slurmctld holds is the accounted one that started
  // in the same second.
  auto is_current = [&](const SlurmJob& r) {
    return current != nullptr && std::fabs(r.start_time - current->start_time) < 1;
  };
  for (const auto& r : accounted) {
    if (is_current(r)) continue;
    // An accounted run without an end still runs (or its end has not reached slurmdbd yet).
    add(r.start_time, r.end_time > 0 ? r.end_time : now);
  }
  if (current != nullptr) {
    // While it runs, slurmctld's end_time is the time limit's end, not an end.
    bool ended = phase_of(current->state) == Phase::kFinal;
    add(current->start_time, ended && current->end_time > 0 ? current->end_time : now);
  }
  std::sort(runs.begin(), runs.end(),
            [](const RunSegment& a, const RunSegment& b) { return a.start < b.start; });
  return runs;
}

std::optional<double> end_held_while_suspended(const SlurmJob& last,
                                               const std::vector<SlurmJob>& accounted) {
  if (phase_of(last.state) != Phase::kFinal || last.suspend_time <= 0 || last.end_time <= 0 ||
      std::fabs(last.end_time - last.suspend_time) >= 1)
    return std::nullopt;
  for (const auto& r : accounted) {
    // The same run: it started in the same second (Slurm's times are whole seconds).
    if (std::fabs(r.start_time - last.start_time) < 1 && r.last_step_end >= last.end_time + 1)
      return r.last_step_end;
  }
  return std::nullopt;
}

double total_seconds(const std::vector<RunSegment>& runs) {
  double total = 0;
  for (const auto& r : runs) total += r.end - r.start;
  return total;
}

std::optional<std::string> signal_name(int sig) {
  static constexpr std::array<std::pair<int, const char*>, 15> kNames = {{
      {SIGHUP, "HUP"},
      {SIGINT, "INT"},
      {SIGQUIT, "QUIT"},
      {SIGABRT, "ABRT"},
      {SIGKILL, "KILL"},
      {SIGALRM, "ALRM"},
      {SIGTERM, "TERM"},
      {SIGUSR1, "USR1"},
      {SIGUSR2, "USR2"},
      {SIGURG, "URG"},
      {SIGCONT, "CONT"},
      {SIGSTOP, "STOP"},
      {SIGTSTP, "TSTP"},
      {SIGTTIN, "TTIN"},
      {SIGTTOU, "TTOU"},
  }};
  for (const auto& [number, name] : kNames)
    if (number == sig) return name;
  return std::nullopt;
}

}  // namespace nodus::backend::slurm
