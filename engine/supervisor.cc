#include "engine/supervisor.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "backend/local/cgroup.h"
#include "billing/catalog.h"
#include "billing/stop_plan.h"
#include "core/error.h"
#include "core/lifecycle.h"
#include "core/parse.h"
#include "core/secret.h"
#include "core/timing.h"
#include "engine/measure.h"
#include "engine/observer.h"
#include "engine/signals.h"
#include "engine/stop_controller.h"
#include "engine/watchdog.h"
#include "store/gpu_locks.h"
#include "store/outcome_file.h"

namespace nodus::engine {
namespace {

using Clock = std::chrono::steady_clock;

std::string join_indices(const std::vector<int>& v) {
  std::string s;
  for (int i : v) s += (s.empty() ? "" : ",") + std::to_string(i);
  return s;
}

// The steady-clock instant that corresponds to a unix time in the recent past or future.
Clock::time_point steady_at(double unix_time) {
  auto delta = std::chrono::duration<double>(unix_time - unix_now());
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(delta);
}

// The latest moment the job can have ended (unix seconds): Slurm's end time is cut to its second.
double latest_end(const backend::Outcome& o) {
  return o.whole_seconds ? std::floor(o.ended_at) + 1 : o.ended_at;
}

void note(bool attach, const std::string& text) {
  if (attach) std::fprintf(stderr, "nodus: %s\n", redact_text(text).c_str());
}

// What the job is billed: all it ran (start to the moment its tree was dead) at its rate, as
// the provider bills it. The stop plan's SIGKILL comes kKillMargin before the cap, so a job
// ends inside it unless the kill itself was late (a loaded machine, a cap smaller than starting
// a process takes): then the bill is still what ran, and the record says by how much it went
// past the cap, never a figure made to fit it.
// A cluster's record (Slurm: whole seconds, the end stamped when slurmctld hears of it, late
// when slurmctld was down) says when the job's allocation ended, not when its processes did: the
// note says whose figure it is.
double billed_cost(JobRecord& job, std::optional<double> budget_cap, double seconds,
                   bool cluster_record) {
  double cost = billing::cost_usd(job.gpu_count, job.rate_per_gpu_hour, seconds);
  std::optional<double> cap = effective_cap(job.max_cost, budget_cap);
  if (cap && cost > *cap) {
    const double past_ms = (cost - *cap) / std::max(1e-300, cost) * seconds * 1000;
    char buf[300];
    if (cluster_record)
      std::snprintf(buf, sizeof buf,
                    "Slurm records its end %.0f s past its cap (slurmctld's end, in whole "
                    "seconds, stamped when it hears of the end): billed %s for all Slurm "
                    "records, %s over",
                    past_ms / 1000, format_usd(cost).c_str(), format_usd(cost - *cap).c_str());
    else
      std::snprintf(buf, sizeof buf, "ran %.0f ms past its cap: billed %s for all it ran, %s over",
                    past_ms, format_usd(cost).c_str(), format_usd(cost - *cap).c_str());
    add_note(job, buf);
  }
  return cost;
}

// Carries out stop actions on the backend and handles their results: a failed SIGTERM is
// retried once (then the caller escalates to the kill); a failed kill is retried until the
// backend's own limit and, if the job still has processes, recorded in the job's note.
struct StopExecutor {
  backend::Backend& backend;
  JobRecord& job;
  bool attach;
  std::string last_error;
  std::string told;  // the kill failure last printed
  // When the first SIGTERM went out (unix seconds, 0: none yet), stamped before it is sent so
  // that a job which ended before this moment certainly ended before the signal reached it.
  std::atomic<double> first_term{0};

  void stamp_term() {
    double none = 0;
    first_term.compare_exchange_strong(none, unix_now());
  }

  bool term() {
    stamp_term();
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto r = backend.signal(job, SIGTERM);
      if (r) return true;
      last_error = r.error().message;
    }
    return false;
  }

  void kill() {
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto r = backend.kill(job);
      if (r) return;
      last_error = r.error().message;
      if (!r.error().retryable()) break;
    }
    // Said once: a kill that fails the same way again (a rejected token) adds no line.
    if (last_error != told) note(attach, "kill failed: " + last_error);
    told = last_error;
    add_note(job, "kill failed: " + last_error);
  }

  // On the watchdog's thread: only what Backend allows from another thread (signal()); the
  // main loop reaps and finishes the job once it sees the exit.
  void from_watchdog(const StopAction& a) {
    if (a.kill) {
      (void)backend.signal(job, SIGKILL);
    } else if (a.term) {
      stamp_term();
      if (!backend.signal(job, SIGTERM)) (void)backend.signal(job, SIGKILL);
    }
  }
};

}  // namespace

std::map<std::string, std::string> job_environment(const JobRecord& job,
                                                   const std::map<std::string, std::string>& user) {
  std::map<std::string, std::string> env = user;
  env["NODUS_JOB_ID"] = std::to_string(job.id);
  if (!job.metrics_path.empty()) env["NODUS_METRICS"] = job.metrics_path;
  if (job.backend == "local") {
    // A CPU-only job sees no GPU: it is not billed for one.
    std::string visible = job.gpu_count > 0 ? join_indices(job.gpu_indices) : "";
    env["CUDA_VISIBLE_DEVICES"] = visible;
    env["NVIDIA_VISIBLE_DEVICES"] = job.gpu_count > 0 ? visible : "void";
  }
  if (!user.count("PYTHONUNBUFFERED") && std::getenv("PYTHONUNBUFFERED") == nullptr)
    env["PYTHONUNBUFFERED"] = "1";  // output reaches the log as it is printed
  for (const auto& [k, v] : job.params->items())
    env["NODUS_PARAM_" + to_upper(k)] = v.is_string() ? v.get<std::string>() : v.dump();
  return env;
}

namespace {

// The reserved outcome file of a job (store/outcome_file.h): closed with the supervisor, and
// removed unless the outcome had to be kept in it.
struct OutcomeFile {
  explicit OutcomeFile(const std::string& log_path)
      : fd(store::reserve_outcome_file(log_path)), path(store::outcome_path(log_path)) {}
  ~OutcomeFile() {
    if (fd < 0) return;
    ::close(fd);
    if (!kept) ::unlink(path.c_str());
  }
  OutcomeFile(const OutcomeFile&) = delete;
  OutcomeFile& operator=(const OutcomeFile&) = delete;
  int fd;
  std::string path;
  bool kept = false;
};

// A write while the job runs that the store refuses (a full disk) does not end the
// supervision: the job goes on under its caps, which are kept here, not in the store.
void record(store::Store& store, const JobRecord& job, bool attach) {
  try {
    store.update_job(job);
  } catch (const Fatal& e) {
    note(attach,
         std::string("cannot write the store (") + e.what() + "): the job goes on under its caps");
  }
}

// Starts the job on the backend: its environment, its instrumentation and the record of its
// start (made just before its first process starts). A failed launch is recorded as failed and
// thrown.
void launch(store::Store& store, backend::Backend& backend, JobRecord& job, const SuperviseRun& run,
            JobObserver& observer) {
  backend::LaunchSpec spec;
  job.metrics_path = backend.metrics_path(job);
  spec.env = job_environment(job, run.env);
  (*job.options)["instrumentation"] = prepare_instrumentation(job, run.options, spec.env);
  timing::step("environment and instrumentation prepared");
  spec.log_path = job.log_path;
  spec.attach = run.attach;
  spec.log_limit = run.options.log_limit;
  spec.on_line = [&observer](std::string_view line) { observer.on_line(line); };
  // Recorded as started, with its cgroup and a heartbeat, just before its first process starts:
  // killed before it records the launch, this supervisor leaves reconcile a job to kill and bill
  // to that heartbeat (its sentinel ends the job as it dies), not one that "never started".
  spec.before_start = [&store](const JobRecord& ready) {
    // Its GPUs stay claimed while its cgroup has processes, whoever holds their locks
    // (store/gpu_locks.h): a job that outlives its supervisor and sentinel keeps them.
    if (!ready.gpu_indices.empty())
      store::note_gpu_cgroup(ready.gpu_indices, ready.id, store.path(),
                             backend::local::cgroup_from_note(ready.note));
    JobRecord pending = ready;
    const double now = unix_now();
    move_job(pending, JobState::kStarting);
    pending.started_at = now;
    store.together([&] {
      store.update_job(pending);
      store.write_tick(pending.id, {now, {}, {}, {}});
    });
    timing::step("start recorded");
  };

  auto submitted = backend.submit(job, spec);
  if (!submitted) {
    end_job(job, {JobState::kFailed, unix_now(), submitted.error().exit_code,
                  submitted.error().message});
    store.release_gpus(job.id);
    store.update_job(job);
    throw Fatal(submitted.error());
  }
  move_job(job, job.started_at ? JobState::kRunning : JobState::kStarting);
  record(store, job, run.attach);
  timing::step("launch recorded");
  if (run.on_launched) run.on_launched(job, "");
}

// One launched job's supervision to its end: its stop plan, the controller that this thread and
// the watchdog's share (mu guards it), what carries out their actions, and the final record.
class Supervision {
 public:
  Supervision(store::Store& store, backend::Backend& backend, JobRecord& job,
              const SuperviseRun& run, JobObserver& observer)
      : store_(store),
        backend_(backend),
        job_(job),
        run_(run),
        observer_(observer),
        plan_(billing::plan_stop(job, run.options.budget_cap)),
        control_(plan_, std::chrono::milliseconds(job.grace_ms)),
        exec_{backend, job, run.attach, {}, {}} {
    if (auto warning =
            plan_warning(plan_, std::chrono::milliseconds(job.grace_ms),
                         job.timeout_ms ? std::optional(std::chrono::milliseconds(*job.timeout_ms))
                                        : std::nullopt)) {
      note(run_.attach, *warning);
      add_note(job_, *warning);
    }
    if (job_.started_at) arm();
    // The watchdog carries out the deadlines on its own thread where the backend allows signals
    // from another thread; the loop still checks them too (the controller acts once).
    if (backend_.concurrent_signal_safe())
      watchdog_.emplace(
          [this]() -> std::optional<Clock::time_point> {
            std::lock_guard lock(mu_);
            return control_.next_deadline();
          },
          [this](Clock::time_point now) {
            StopAction a;
            {
              std::lock_guard lock(mu_);
              a = control_.on_time(now);
            }
            exec_.from_watchdog(a);
          });
  }

  // Waits on the backend until the job ends (or is lost), acting on deadlines, stop requests,
  // tampering and the observer's policies on the way.
  backend::Outcome watch();
  // Bills the job, decides its final state and writes it; returns the exit status of `nodus run`.
  int finish(const backend::Outcome& outcome, OutcomeFile& outcome_file);

 private:
  template <typename F>
  StopAction locked(F&& f) {
    std::lock_guard lock(mu_);
    return f(control_);
  }
  void arm();
  void act(StopAction a);  // from this thread, escalating a failed SIGTERM to the kill
  // The loop's handlers: each returns the job's outcome when the job has ended.
  std::optional<backend::Outcome> on_error(const Error& error);
  backend::Outcome on_exited(const backend::Event& event);
  void on_queued(const backend::Event& event);
  void on_tick(Clock::time_point now);

  store::Store& store_;
  backend::Backend& backend_;
  JobRecord& job_;
  const SuperviseRun& run_;
  bool sweep_died_ = false;  // noted once
  JobObserver& observer_;
  const std::optional<StopPlan> plan_;
  std::mutex mu_;
  StopController control_;
  StopExecutor exec_;
  std::optional<Watchdog> watchdog_;  // last: stopped before what it uses
};

void Supervision::arm() {
  observer_.on_started(job_);
  std::optional<Clock::time_point> term_at, kill_at;
  {
    std::lock_guard lock(mu_);
    control_.arm(steady_at(*job_.started_at));
    term_at = control_.term_at();
    kill_at = control_.kill_at();
  }
  if (kill_at) {
    auto armed = backend_.arm_deadline(job_, term_at.value_or(*kill_at), *kill_at);
    if (!armed) note(run_.attach, armed.error().message);
  }
}

void Supervision::act(StopAction a) {
  if (!a.note.empty()) note(run_.attach, a.note);
  if (a.term && !exec_.term()) {
    std::lock_guard lock(mu_);
    a = control_.on_term_failed(exec_.last_error);
    if (!a.note.empty()) {
      note(run_.attach, a.note);
      add_note(job_, a.note);
    }
  }
  if (a.kill) exec_.kill();
  if (watchdog_) watchdog_->poke();
}

std::optional<backend::Outcome> Supervision::on_error(const Error& error) {
  // The backend lost sight of the job (e.g. slurmrestd unreachable for too long).
  note(run_.attach, error.message);
  if (error.retryable()) return std::nullopt;
  add_note(job_, error.message);
  StopAction a = locked([&](StopController& c) { return c.on_lost(error.message); });
  a.note.clear();  // already said
  act(a);
  backend::Outcome outcome;
  outcome.exit_code = exit_code::kNodusError;
  outcome.started_at = job_.started_at.value_or(unix_now());
  outcome.ended_at = unix_now();
  return outcome;
}

backend::Outcome Supervision::on_exited(const backend::Event& event) {
  backend::Outcome outcome = event.outcome;
  std::lock_guard lock(mu_);
  if (!outcome.tampered.empty()) {
    note(run_.attach, outcome.tampered);
    add_note(job_, outcome.tampered);
    (void)control_.on_tampered();
  }
  // An end past the TERM moment that nodus's own SIGTERM did not cause was the node's
  // enforcer's (Slurm): the plan's reason. Not a clean exit (0, no signal): timeout(1) makes a
  // job it stopped exit 124, so a job that exited 0 ended by itself, however late nodus saw it
  // (a Slurm end is seen a poll or more later; across an outage, much later). And when it
  // ended, not when nodus noticed.
  if (outcome.exit_code != 0 || outcome.signal)
    control_.on_exit(std::min(Clock::now(), steady_at(latest_end(outcome))));
  return outcome;
}

void Supervision::on_queued(const backend::Event& event) {
  // Queued before its first run: ps and show say "waiting", not "starting" (a requeued job's
  // runs so far are billed by the backend's refresh). A hold, which no amount of waiting ends,
  // is said once, with what releases it.
  bool changed = false;
  if (!job_.started_at && job_.state != JobState::kWaiting)
    changed = move_job(job_, JobState::kWaiting);
  if (event.why.find("Held") != std::string::npos) {
    std::string held = "Slurm holds job " + job_.backend_id + " in its queue (" + event.why +
                       "); it starts once released (scontrol release " + job_.backend_id + ")";
    note(run_.attach, held);
    add_note(job_, held);
    changed = true;
  }
  if (changed) record(store_, job_, run_.attach);
}

void Supervision::on_tick(Clock::time_point now) {
  observer_.tick(job_);
  {
    std::lock_guard lock(mu_);
    if (control_.reason()) return;  // stopping already
  }
  if (auto why = observer_.low_util_reason()) {
    add_note(job_, *why);
    act(locked([&](StopController& c) { return c.on_policy(JobState::kLowUtil, *why, now); }));
  } else if (auto done = observer_.measured_reason()) {
    // --measure: the time box is the plan, so a job stopped by it completed.
    add_note(job_, *done);
    act(locked([&](StopController& c) { return c.on_policy(JobState::kCompleted, *done, now); }));
  }
}

backend::Outcome Supervision::watch() {
  const auto interval = run_.options.sample_interval;
  auto next_tick = Clock::now() + interval;
  std::optional<backend::Outcome> outcome;
  while (!outcome) {
    auto next = next_tick;
    {
      std::lock_guard lock(mu_);
      if (auto d = control_.next_deadline(); d && *d < next) next = *d;
    }
    auto event = backend_.wait(job_, next, run_.signals ? run_.signals->fd() : -1);
    if (!event) {
      outcome = on_error(event.error());
      continue;
    }
    switch (event->kind) {
      case backend::Event::Kind::kTampered:
        note(run_.attach, event->why);
        add_note(job_, event->why);
        act(locked([](StopController& c) { return c.on_tampered(); }));
        continue;
      case backend::Event::Kind::kExited:
        outcome = on_exited(*event);
        continue;
      case backend::Event::Kind::kQueued:
        on_queued(*event);
        break;
      case backend::Event::Kind::kStarted:
        job_.started_at = event->started_at;
        move_job(job_, JobState::kRunning);
        record(store_, job_, run_.attach);
        arm();
        if (watchdog_) watchdog_->poke();
        break;
      case backend::Event::Kind::kWoken:
        while (auto sig = run_.signals ? run_.signals->take() : std::nullopt) {
          const auto at = Clock::now();
          if (*sig == SIGTERM && run_.sweep_pid > 0 && ::getppid() != run_.sweep_pid &&
              !sweep_died_) {
            sweep_died_ = true;
            add_note(job_, "stopped with its sweep: the sweep's nodus process (pid " +
                               std::to_string(run_.sweep_pid) + ") died");
          }
          act(locked([&](StopController& c) { return c.on_signal(*sig, at); }));
        }
        break;
      default:
        break;
    }
    const auto now = Clock::now();
    if (StopAction a = locked([&](StopController& c) { return c.on_time(now); }); a.term || a.kill)
      act(a);
    if (now >= next_tick) {
      on_tick(now);
      while (next_tick <= now) next_tick += interval;
    }
  }
  watchdog_.reset();  // no more signals from another thread: the job is being finished
  return *outcome;
}

int Supervision::finish(const backend::Outcome& outcome, OutcomeFile& outcome_file) {
  JobRecord& job = job_;
  exec_.kill();  // whatever of the tree outlived its main process
  timing::step("tree killed");
  if (auto leftovers = backend_.check_leftovers(job)) add_note(job, *leftovers);
  job.started_at = outcome.started_at;
  job.ended_at = outcome.ended_at;
  job.cost = billed_cost(
      job, run_.options.budget_cap,
      outcome.billed_seconds.value_or(std::max(0.0, outcome.ended_at - outcome.started_at)),
      outcome.whole_seconds);
  if (!outcome.billing_note.empty()) add_note(job, outcome.billing_note);
  job.signal = outcome.signal;
  auto reason = control_.reason();
  // A job that ended by itself before nodus's first SIGTERM went out keeps its own outcome,
  // whatever stop nodus planned or began next; so does one the cluster records as completed
  // (sacct's COMPLETED 0:0 is completed, as Slurm bills and reports it: issue 30). Not a stop
  // that kills at once for a reason of its own (lost, tampered).
  const double term_sent = exec_.first_term.load();
  if (reason && *reason != JobState::kLost && *reason != JobState::kTampered &&
      *reason != JobState::kCompleted) {
    const std::string planned = std::string(to_string(*reason));
    if (term_sent > 0 && latest_end(outcome) <= term_sent) {
      add_note(job, "ended by itself before nodus's SIGTERM (for " + planned + ") went out");
      reason.reset();
    } else if (outcome.completed_by_record) {
      add_note(job, "Slurm records it COMPLETED with exit 0 as nodus stopped it (for " + planned +
                        "): completed, as Slurm has it");
      reason.reset();
    }
  }
  JobEnd end{JobState::kFailed, outcome.ended_at, outcome.exit_code, ""};
  if (reason) {
    end.state = *reason;
  } else if (!outcome.stopped_by_cluster.empty()) {
    // The cluster's own limit, not the job and not nodus: a timeout, with what set it.
    note(run_.attach, outcome.stopped_by_cluster);
    end.state = JobState::kTimeout;
    end.note = outcome.stopped_by_cluster;
  } else if (outcome.exit_code == 0) {
    end.state = JobState::kCompleted;
  }
  end_job(job, end);
  std::string verdict = observer_.finish(job);
  timing::step("measurements finished");
  try {
    store_.together([&] {
      store_.release_gpus(job.id);
      store_.update_job(job);
    });
  } catch (const Fatal& e) {
    // A full disk: the outcome goes where space was set aside for it, and the next nodus
    // command that can write the store records it from there.
    if (!store::write_outcome_file(outcome_file.fd, job)) throw;
    outcome_file.kept = true;
    note(true, std::string("cannot write the store (") + e.what() + "): job " +
                   std::to_string(job.id) + "'s outcome is kept in " + outcome_file.path +
                   " until a nodus command can write it (nodus ps)");
  }
  timing::step("outcome stored");
  if (!verdict.empty()) note(run_.attach, verdict);
  return exit_status_for(job);
}

}  // namespace

int Supervisor::run(JobRecord& job, const SuperviseRun& run) {
  JobObserver observer(store_, run.options, run.attach);
  OutcomeFile outcome_file(job.log_path);
  launch(store_, backend_, job, run, observer);
  Supervision supervision(store_, backend_, job, run, observer);
  backend::Outcome outcome = supervision.watch();
  timing::step("job ended");
  return supervision.finish(outcome, outcome_file);
}

}  // namespace nodus::engine
