// Measurements, not checks: how fast nodus starts and stops Slurm jobs, against Slurm's own
// time-limit enforcement. Disabled because it takes ~1.5 min; run it with
//   nodus_slurm_tests --gtest_also_run_disabled_tests --gtest_filter='*Measure*'

#include <gtest/gtest.h>

#include <cstdio>

#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

bool final_state(const SlurmJob& r) { return phase_of(r.state) == Phase::kFinal; }

void report(const char* what, const std::vector<double>& samples) {
  std::printf("%-56s", what);
  for (double s : samples) std::printf(" %7.3f", s);
  std::printf("  (s)\n");
}

TEST(SlurmClusterMeasure, DISABLED_LatenciesAgainstSlurmsOwnTimeLimit) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  auto rest = cluster_client(settings);

  // Slurm's own limit first, in the background of the rest: a 1-minute job that would run 10.
  JobRecord limited = new_job({"sleep", "600"}, dir);
  limited.timeout_ms = 60'000;
  ASSERT_TRUE(backend->submit(limited, quiet()).ok());

  std::vector<double> script_start, started_event, submit_call;
  for (int i = 0; i < 5; ++i) {
    JobRecord job = new_job({"bash", "-c", "date +%s.%N"}, dir);
    double t0 = unix_now();
    ASSERT_TRUE(backend->submit(job, quiet()).ok());
    submit_call.push_back(unix_now() - t0);
    for (;;) {
      auto e = backend->wait(job, Clock::now() + std::chrono::seconds(30), -1);
      ASSERT_TRUE(e.ok());
      if (e->kind == Event::Kind::kStarted) started_event.push_back(unix_now() - t0);
      if (e->kind == Event::Kind::kExited) break;
    }
    script_start.push_back(std::stod(dir.read(job.log_path)) - t0);
  }

  std::vector<double> seen_after_deadline, slurm_end_after_deadline;
  for (int i = 0; i < 3; ++i) {
    JobRecord job = new_job({"sleep", "300"}, dir);
    ASSERT_TRUE(backend->submit(job, quiet()).ok());
    double started = 0;
    while (!started) {
      auto e = backend->wait(job, Clock::now() + std::chrono::seconds(30), -1);
      ASSERT_TRUE(e.ok());
      if (e->kind == Event::Kind::kStarted) started = e->started_at;
    }
    double deadline = started + 3;
    auto at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(deadline - unix_now()));
    for (;;) {
      auto e = backend->wait(job, at, -1);
      ASSERT_TRUE(e.ok());
      if (e->kind == Event::Kind::kDeadline) break;
    }
    double kill_at = unix_now();
    ASSERT_TRUE(backend->kill(job).ok());
    auto ended = poll_until(*rest, std::stoll(job.backend_id), final_state, 10);
    ASSERT_TRUE(ended);
    seen_after_deadline.push_back(unix_now() - deadline);
    slurm_end_after_deadline.push_back(ended->end_time - deadline);
    std::printf(
        "cancel sample: start_time %.0f (final record %.0f), deadline %.3f, kill sent "
        "%.3f, end_time %.0f\n",
        started, ended->start_time, deadline, kill_at, ended->end_time);
  }

  auto timed_out = poll_until(*rest, std::stoll(limited.backend_id), final_state, 150);
  ASSERT_TRUE(timed_out);
  EXPECT_EQ(timed_out->state, "TIMEOUT");
  double slurm_overshoot = timed_out->end_time - timed_out->start_time - 60;

  std::printf("\n");
  report("submit call (POST /job/submit round trip)", submit_call);
  report("submit -> job script's first line", script_start);
  report("submit -> wait() reports kStarted (1 s polling)", started_event);
  report("deadline -> Slurm reports the cancelled job final", seen_after_deadline);
  report("deadline -> Slurm's end_time (whole seconds)", slurm_end_after_deadline);
  report("Slurm's own 1-minute limit: end - start - 60 s", {slurm_overshoot});
  RecordProperty("slurm_time_limit_overshoot_s", std::to_string(slurm_overshoot));
}

}  // namespace
}  // namespace nodus::backend::slurm
