#include "engine/stop_controller.h"

#include <csignal>
#include <cstdio>

#include "core/parse.h"

namespace nodus::engine {
namespace {

StopController::Clock::duration to_duration(Seconds s) {
  return std::chrono::duration_cast<StopController::Clock::duration>(s);
}

std::string seconds_text(Seconds s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s.count());
  return buf;
}

}  // namespace

void StopController::arm(Time start) {
  armed_ = true;
  if (!plan_) return;
  const Time plan_term = start + to_duration(plan_->term_after);
  const Time plan_kill = start + to_duration(plan_->kill_after);
  // A stop requested before the job started keeps its own (earlier) moments.
  if (!term_at_ || plan_term < *term_at_) term_at_ = plan_term;
  if (!kill_at_ || plan_kill < *kill_at_) kill_at_ = plan_kill;
}

std::optional<StopController::Time> StopController::next_deadline() const {
  std::optional<Time> next = term_at();
  if (auto k = kill_at(); k && (!next || *k < *next)) next = k;
  return next;
}

StopAction StopController::on_time(Time now) {
  StopAction a;
  if (!kill_sent_ && kill_at_ && now >= *kill_at_) {
    if (!reason_ && plan_) reason_ = plan_->reason;
    kill_sent_ = true;
    a.kill = true;
    if (!term_sent_) term_sent_ = true;  // the kill supersedes a TERM not yet sent
    return a;
  }
  if (!term_sent_ && term_at_ && now >= *term_at_) {
    if (!reason_ && plan_) reason_ = plan_->reason;
    term_sent_ = true;
    a.term = true;
  }
  return a;
}

void StopController::request_stop(JobState reason, Time now) {
  if (!reason_) reason_ = reason;
  const Time kill = now + grace_;
  if (!kill_at_ || kill < *kill_at_) kill_at_ = kill;
  if (!term_sent_) term_at_ = now;
}

JobState state_for_signal(int sig) {
  return sig == SIGINT ? JobState::kCancelled : JobState::kStopped;
}

StopAction StopController::on_signal(int sig, Time now) {
  StopAction a;
  if (kill_sent_) return a;
  if (sig == SIGINT && interrupted_) {
    kill_at_ = now;
    a = on_time(now);
    a.note = "interrupted again: killing the job now";
    return a;
  }
  if (sig == SIGINT) interrupted_ = true;
  request_stop(state_for_signal(sig), now);
  a = on_time(now);
  a.note = "stopping the job (SIGTERM, SIGKILL after " + format_duration(grace_) + ")";
  return a;
}

StopAction StopController::on_policy(JobState reason, const std::string& why, Time now) {
  if (reason_ || kill_sent_) return {};
  request_stop(reason, now);
  StopAction a = on_time(now);
  a.note = "stopping: " + why;
  return a;
}

StopAction StopController::on_lost(const std::string& why) {
  reason_ = JobState::kLost;
  StopAction a;
  a.kill = true;
  kill_sent_ = term_sent_ = true;
  a.note = why;
  return a;
}

StopAction StopController::on_tampered() {
  reason_ = JobState::kTampered;
  StopAction a;
  a.kill = !kill_sent_;
  kill_sent_ = term_sent_ = true;
  return a;
}

StopAction StopController::on_term_failed(const std::string& why) {
  StopAction a;
  if (kill_sent_) return a;
  kill_sent_ = true;
  a.kill = true;
  a.note = "SIGTERM failed (" + why + "): killed the job instead";
  return a;
}

std::optional<JobState> StopController::on_exit(Time now) {
  if (!reason_ && plan_ && armed_ && term_at_ && now >= *term_at_) reason_ = plan_->reason;
  return reason_;
}

std::optional<std::string> plan_warning(const std::optional<StopPlan>& plan,
                                        std::chrono::milliseconds grace,
                                        std::optional<std::chrono::milliseconds> timeout) {
  if (!plan || plan->reason == JobState::kTimeout) return std::nullopt;
  const std::string what = plan->reason == JobState::kBudget ? "the budget share" : "--max-cost";
  std::vector<std::string> out;
  if (plan->kill_after < Seconds(grace))
    out.push_back(what + " buys " + seconds_text(plan->kill_after) +
                  " of the GPUs, less than the " + format_duration(grace) +
                  " grace period: SIGTERM goes out at start (t=0), " + "SIGKILL at " +
                  seconds_text(plan->kill_after));
  // The plan is the earliest stop: a cap's plan with a timeout means the timeout comes later.
  if (timeout && Seconds(*timeout) >= plan->term_after)
    out.push_back(
        "--timeout " + format_duration(*timeout) + " never acts: " + what +
        " stops the job first (SIGTERM at " +
        format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(plan->term_after)) +
        ", SIGKILL at " +
        format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(plan->kill_after)) +
        ")");
  if (out.empty()) return std::nullopt;
  std::string text = out[0];
  for (size_t i = 1; i < out.size(); ++i) text += "; " + out[i];
  return text;
}

}  // namespace nodus::engine
