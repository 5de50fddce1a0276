#pragma once
// A backend whose job exists only in this process, for driving engine::Supervisor without real
// processes (in the manner of ninja's FakeCommandRunner): the job runs `runs_for` seconds from
// its submit and exits with `exit_code`, unless a signal ends it first; every call is recorded.

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace nodus::engine::testing {

class FakeBackend : public backend::Backend {
 public:
  struct Script {
    double runs_for = 3600;     // seconds from submit to its own exit
    int exit_code = 0;          // its own exit status
    bool ignores_term = false;  // SIGTERM does nothing to it; SIGKILL and kill() end it
    std::optional<Error> submit_error;
    int lost_after_waits = -1;  // wait() fails for good from this call on (-1: never)
  };
  explicit FakeBackend(Script script) : script_(std::move(script)) {}

  std::string_view name() const override { return "fake"; }

  Result<void> submit(JobRecord& job, const backend::LaunchSpec& spec) override {
    ++submits;
    if (script_.submit_error) return *script_.submit_error;
    if (spec.before_start) spec.before_start(job);
    started_ = unix_now();
    job.started_at = started_;
    exits_at_ = Clock::now() + seconds(script_.runs_for);
    return {};
  }

  Result<backend::Event> wait(JobRecord&, backend::SteadyTime deadline, int wake_fd) override {
    ++waits;
    if (script_.lost_after_waits >= 0 && waits > script_.lost_after_waits)
      return Error::permanent("fake: lost sight of the job");
    for (;;) {
      if (told_) return Error::permanent("fake: wait() after the job's end was told");
      if (ended_) {
        told_ = true;
        backend::Event e;
        e.kind = backend::Event::Kind::kExited;
        e.outcome = outcome_;
        return e;
      }
      const auto now = Clock::now();
      if (!ended_ && now >= exits_at_) end(script_.exit_code, std::nullopt);
      if (ended_) continue;
      if (now >= deadline) return backend::Event{};  // kDeadline
      const auto until = std::min(deadline, exits_at_);
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      pollfd p{wake_fd, POLLIN, 0};
      if (::poll(&p, wake_fd >= 0 ? 1 : 0, static_cast<int>(std::max<int64_t>(ms, 0))) > 0) {
        backend::Event e;
        e.kind = backend::Event::Kind::kWoken;
        return e;
      }
    }
  }

  Result<void> signal(JobRecord&, int sig) override {
    signals.push_back(sig);
    if (sig == SIGTERM && !term_at) term_at = unix_now();
    if (sig == SIGKILL || (sig == SIGTERM && !script_.ignores_term)) end(128 + sig, sig);
    return {};
  }

  Result<void> kill(JobRecord&) override {
    ++kills;
    end(128 + SIGKILL, SIGKILL);
    return {};
  }

  std::vector<int> signals;  // every signal() in order
  int kills = 0, submits = 0, waits = 0;
  std::optional<double> term_at;   // unix seconds of the first SIGTERM
  std::optional<double> ended_at;  // unix seconds the job ended

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  // A signalled job dies 1 ms after the signal: nodus stamps its SIGTERM just before sending
  // it, and two unix_now() readings nanoseconds apart can be the same double, which would read
  // as a job that ended before the signal went out.
  void end(int status, std::optional<int> sig) {
    if (ended_) return;
    ended_ = true;
    ended_at = unix_now() + (sig ? 0.001 : 0.0);
    outcome_.exit_code = status;
    outcome_.signal = sig;
    outcome_.started_at = started_;
    outcome_.ended_at = *ended_at;
  }

  Script script_;
  double started_ = 0;
  Clock::time_point exits_at_ = Clock::time_point::max();
  bool ended_ = false, told_ = false;
  backend::Outcome outcome_;
};

}  // namespace nodus::engine::testing
