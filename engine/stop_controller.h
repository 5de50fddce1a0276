#pragma once
// StopController decides when a job gets SIGTERM and SIGKILL and why, and nothing else: it is
// pure (no clock, no backend, no store), so every branch is tested with a fake clock
// (tests/engine/stop_controller_test.cc). Supervisor feeds it events and the time and carries
// out what it returns; its watchdog thread asks it about deadlines on its own timer, so a job
// that floods the output cannot delay its stop (supervisor.h).
//
// The plan (billing/stop_plan.h) is fixed at start: for a cap, SIGTERM `grace` before the cap
// moment and SIGKILL at it; for a timeout, SIGTERM at the timeout and SIGKILL `grace` later. Stop
// requests (SIGINT, SIGTERM, SIGHUP, `nodus stop`, a --min-util stop) send SIGTERM now and SIGKILL
// after the grace period or at the plan's kill, whichever comes first; a second SIGINT kills at
// once. The first reason wins: a job cancelled by Ctrl-C stays cancelled when its cap comes up
// during the grace period.

#include <chrono>
#include <optional>
#include <string>

#include "billing/stop_plan.h"
#include "core/job.h"

namespace nodus::engine {

using billing::Seconds;
using billing::StopPlan;

struct StopAction {
  bool term = false;  // send SIGTERM to the job's tree now
  bool kill = false;  // kill the job's tree now (SIGKILL; cgroup.kill where there is one)
  std::string note;   // for the terminal (attached) and, where it says so, the record
  bool operator==(const StopAction&) const = default;
};

// What a signal to nodus makes of its job, running or still waiting for its GPUs: SIGINT
// (Ctrl-C) cancels it; SIGTERM (`nodus stop`, a sweep's stop) and SIGHUP stop it.
JobState state_for_signal(int sig);

class StopController {
 public:
  using Clock = std::chrono::steady_clock;
  using Time = Clock::time_point;

  StopController(std::optional<StopPlan> plan, std::chrono::milliseconds grace)
      : plan_(plan), grace_(grace) {}

  // The job runs since `start` (steady clock): the plan's deadlines become instants.
  void arm(Time start);
  bool armed() const { return armed_; }

  std::optional<Time> term_at() const { return term_sent_ ? std::nullopt : term_at_; }
  std::optional<Time> kill_at() const { return kill_sent_ ? std::nullopt : kill_at_; }
  // The next instant at which on_time() has something to do; nullopt: none.
  std::optional<Time> next_deadline() const;

  // Time has passed: TERM and/or KILL when their moments have come.
  StopAction on_time(Time now);
  // SIGINT -> cancelled, SIGTERM/SIGHUP -> stopped; a second SIGINT kills now.
  StopAction on_signal(int sig, Time now);
  // A policy stop (--min-util): reason kLowUtil, with why in the note.
  StopAction on_policy(JobState reason, const std::string& why, Time now);
  // The backend lost sight of the job: kill it (whatever is reachable) and record kLost.
  StopAction on_lost(const std::string& why);
  // One of nodus's own enforcers was killed or stopped (the backend says which): kill the job
  // now and record kTampered, whatever stop was under way.
  StopAction on_tampered();
  // Sending SIGTERM failed (after a retry): escalate to the kill now, with a note.
  StopAction on_term_failed(const std::string& why);

  // The job's main process ended at `now`: the reason to record, nullopt for its own exit.
  // An exit once the plan's SIGTERM was due counts as that stop, even if the sentinel sent it.
  std::optional<JobState> on_exit(Time now);

  std::optional<JobState> reason() const { return reason_; }
  bool term_sent() const { return term_sent_; }
  bool kill_sent() const { return kill_sent_; }

 private:
  void request_stop(JobState reason, Time now);

  std::optional<StopPlan> plan_;
  std::chrono::milliseconds grace_;
  bool armed_ = false;
  std::optional<Time> term_at_, kill_at_;
  std::optional<JobState> reason_;
  bool term_sent_ = false;
  bool kill_sent_ = false;
  bool interrupted_ = false;
};

// A cap so small that its SIGKILL comes before a full grace period: SIGTERM goes out at once.
// And a --timeout (`timeout`) that can never act, since the cap stops the job first (--gpu
// H100:8 --max-cost 5 --timeout 2h: SIGTERM at 14m15s). Returns the warning that says so and
// when each signal goes out, nullopt for a plan with neither.
std::optional<std::string> plan_warning(const std::optional<StopPlan>& plan,
                                        std::chrono::milliseconds grace,
                                        std::optional<std::chrono::milliseconds> timeout = {});

}  // namespace nodus::engine
