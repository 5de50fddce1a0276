#include "engine/supervisor.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "billing/catalog.h"
#include "core/error.h"
#include "core/parse.h"
#include "engine/deadlines.h"
#include "engine/measure.h"
#include "engine/observer.h"
#include "engine/signals.h"

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

void note(bool attach, const std::string& text) {
  if (attach) std::fprintf(stderr, "nodus: %s\n", text.c_str());
}

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
  for (const auto& [k, v] : job.params.items())
    env["NODUS_PARAM_" + to_upper(k)] = v.is_string() ? v.get<std::string>() : v.dump();
  return env;
}

int exit_status_for(const JobRecord& job) {
  switch (job.state) {
    case JobState::kCompleted:
      return 0;
    case JobState::kTimeout:
      return exit_code::kTimeout;
    case JobState::kCostCap:
    case JobState::kBudget:
      return exit_code::kCostCap;
    case JobState::kLowUtil:
      return exit_code::kLowUtilization;
    case JobState::kCancelled:
      return exit_code::kInterrupted;
    case JobState::kStopped:
      return 128 + SIGTERM;
    case JobState::kFailed:
      return job.exit_code.value_or(1);
    default:
      return exit_code::kNodusError;
  }
}

int Supervisor::run(JobRecord& job, const SuperviseRun& run) {
  JobObserver observer(store_, run.options, run.attach);
  backend::LaunchSpec spec;
  spec.env = job_environment(job, run.env);
  job.options["instrumentation"] = prepare_instrumentation(job, run.options, spec.env);
  spec.log_path = job.log_path;
  spec.attach = run.attach;
  spec.on_line = [&observer](std::string_view line) { observer.on_line(line); };

  auto submitted = backend_.submit(job, spec);
  if (!submitted) {
    job.state = JobState::kFailed;
    job.exit_code = submitted.error().exit_code;
    job.ended_at = unix_now();
    job.note = submitted.error().message;
    store_.release_gpus(job.id);
    store_.update_job(job);
    throw Fatal(submitted.error());
  }
  job.state = job.started_at ? JobState::kRunning : JobState::kStarting;
  store_.update_job(job);
  if (run.on_launched) run.on_launched(job, "");

  const auto plan = plan_stop(job, run.options.budget_cap);
  std::optional<Clock::time_point> term_at, kill_at;
  auto arm = [&] {
    observer.on_started(job);
    if (!plan) return;
    auto start = steady_at(*job.started_at);
    term_at = start + std::chrono::duration_cast<Clock::duration>(plan->term_after);
    kill_at = start + std::chrono::duration_cast<Clock::duration>(plan->kill_after);
  };
  if (job.started_at) arm();

  std::optional<JobState> stop_reason;
  bool term_sent = false;
  bool kill_sent = false;
  const auto interval = run.options.sample_interval;
  auto next_tick = Clock::now() + interval;
  auto grace = std::chrono::milliseconds(job.grace_ms);

  auto stop_now = [&](JobState reason) {  // polite stop now, SIGKILL after the grace period
    if (!stop_reason) stop_reason = reason;
    if (!term_sent) {
      backend_.signal(job, SIGTERM);
      term_sent = true;
    }
    auto deadline = Clock::now() + grace;
    if (!kill_at || deadline < *kill_at) kill_at = deadline;
  };

  backend::Outcome outcome;
  for (;;) {
    auto next = next_tick;
    if (term_at && !term_sent && *term_at < next) next = *term_at;
    if (kill_at && !kill_sent && *kill_at < next) next = *kill_at;
    auto event = backend_.wait(job, next, run.signals ? run.signals->fd() : -1);
    if (!event) {
      // The backend lost sight of the job (e.g. slurmrestd unreachable for too long).
      note(run.attach, event.error().message);
      if (!event.error().retryable()) {
        stop_reason = JobState::kLost;
        job.note = event.error().message;
        backend_.kill(job);
        outcome.exit_code = exit_code::kNodusError;
        outcome.started_at = job.started_at.value_or(unix_now());
        outcome.ended_at = unix_now();
        break;
      }
      continue;
    }
    if (event->kind == backend::Event::Kind::kExited) {
      outcome = event->outcome;
      break;
    }
    if (event->kind == backend::Event::Kind::kStarted) {
      job.started_at = event->started_at;
      job.state = JobState::kRunning;
      store_.update_job(job);
      arm();
    }
    if (event->kind == backend::Event::Kind::kWoken && run.signals) {
      while (auto sig = run.signals->take()) {
        bool second_interrupt = *sig == SIGINT && stop_reason == JobState::kCancelled;
        stop_now(*sig == SIGINT ? JobState::kCancelled : JobState::kStopped);
        if (second_interrupt) kill_at = Clock::now();
        note(run.attach, second_interrupt ? "interrupted again: killing the job now"
                                          : "stopping the job (SIGTERM, SIGKILL after " +
                                                format_duration(grace) + ")");
      }
    }
    auto now = Clock::now();
    if (term_at && !term_sent && now >= *term_at) {
      stop_reason = plan->reason;
      backend_.signal(job, SIGTERM);
      term_sent = true;
    }
    if (kill_at && !kill_sent && now >= *kill_at) {
      if (!stop_reason && plan) stop_reason = plan->reason;
      backend_.kill(job);
      kill_sent = true;
    }
    if (now >= next_tick) {
      observer.tick(job);
      if (!stop_reason) {
        if (auto why = observer.low_util_reason()) {
          note(run.attach, "stopping: " + *why);
          job.note = *why;
          stop_now(JobState::kLowUtil);
        } else if (auto done = observer.measured_reason()) {
          // --measure: the time box is the plan, so a job stopped by it completed.
          note(run.attach, *done);
          job.note = *done;
          stop_now(JobState::kCompleted);
        }
      }
      while (next_tick <= now) next_tick += interval;
    }
  }

  backend_.kill(job);  // whatever of the tree outlived its main process
  if (auto leftovers = backend_.check_leftovers(job))
    job.note = job.note.empty() ? *leftovers : job.note + "; " + *leftovers;
  job.started_at = outcome.started_at;
  job.ended_at = outcome.ended_at;
  job.cost = billing::cost_usd(job.gpu_count, job.rate_per_gpu_hour,
                               std::max(0.0, outcome.ended_at - outcome.started_at));
  job.signal = outcome.signal;
  if (stop_reason) {
    job.state = *stop_reason;
  } else {
    job.state = outcome.exit_code == 0 ? JobState::kCompleted : JobState::kFailed;
  }
  job.exit_code = job.state == JobState::kFailed ? outcome.exit_code : exit_status_for(job);
  std::string verdict = observer.finish(job);
  store_.release_gpus(job.id);
  store_.update_job(job);
  if (!verdict.empty()) note(run.attach, verdict);
  return exit_status_for(job);
}

}  // namespace nodus::engine
