// What Slurm's job states and raw wait statuses mean for nodus.

#include "backend/slurm/job_states.h"

#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fake_http.h"

namespace nodus::backend::slurm {
namespace {

SlurmJob from_fixture(const std::string& file) {
  auto api = std::move(*make_api("v0.0.38"));
  return api->parse_jobs(testing::fixture(file))->at(0);
}

TEST(SlurmPhase, SortsStatesIntoQueuedRunningFinal) {
  for (const char* s : {"PENDING", "REQUEUED", "CONFIGURING"})
    EXPECT_EQ(phase_of(s), Phase::kQueued) << s;
  for (const char* s : {"RUNNING", "SUSPENDED", "COMPLETING"})
    EXPECT_EQ(phase_of(s), Phase::kRunning) << s;
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                        "PREEMPTED", "BOOT_FAIL", "DEADLINE"})
    EXPECT_EQ(phase_of(s), Phase::kFinal) << s;
}

TEST(SlurmWaitStatus, DecodesExitCodesAndSignals) {
  EXPECT_EQ(decode_wait_status(0).exit_code, 0);
  EXPECT_EQ(decode_wait_status(768).exit_code, 3);
  EXPECT_FALSE(decode_wait_status(768).signal.has_value());
  EXPECT_EQ(decode_wait_status(15).exit_code, 143);
  EXPECT_EQ(decode_wait_status(15).signal, SIGTERM);
  EXPECT_EQ(decode_wait_status(9).exit_code, 137);
  EXPECT_EQ(decode_wait_status(36608).exit_code, 143);  // a script that trapped TERM: exit 143
  EXPECT_EQ(decode_wait_status(127 << 8).exit_code, 127);
}

TEST(SlurmOutcome, FollowsSlurmsRecord) {
  Outcome ok = outcome_of(from_fixture("job_completed.json"));
  EXPECT_EQ(ok.exit_code, 0);
  Outcome three = outcome_of(from_fixture("job_failed_exit3.json"));
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_FALSE(three.signal.has_value());
  Outcome cancelled = outcome_of(from_fixture("job_cancelled.json"));
  EXPECT_EQ(cancelled.exit_code, 143);
  EXPECT_EQ(cancelled.signal, SIGTERM);
  EXPECT_EQ(cancelled.started_at, 1795966165);  // Slurm's start_time: queue time is not billed
  EXPECT_EQ(cancelled.ended_at, 1795966167);
}

TEST(SlurmOutcome, JobCancelledWhileQueuedHasZeroLength) {
  Outcome o = outcome_of(from_fixture("job_cancelled_pending.json"));
  EXPECT_EQ(o.exit_code, 143);
  EXPECT_EQ(o.started_at, o.ended_at);
}

TEST(SlurmOutcome, SlurmsTimeLimitGivesTimeoutsExitCode) {
  SlurmJob j = from_fixture("job_timeout.json");
  ASSERT_EQ(j.state, "TIMEOUT");
  EXPECT_EQ(outcome_of(j).exit_code, exit_code::kTimeout);
  EXPECT_GE(j.end_time - j.start_time, 60);
}

TEST(SlurmOutcome, FailureStatesNeverExitZero) {
  SlurmJob j;
  j.state = "NODE_FAIL";
  j.start_time = 10;
  j.end_time = 20;
  EXPECT_NE(outcome_of(j).exit_code, 0);
}

TEST(SlurmFinalState, MapsToNodusStates) {
  JobRecord job;
  EXPECT_EQ(final_state_of(from_fixture("job_completed.json"), job), JobState::kCompleted);
  EXPECT_EQ(final_state_of(from_fixture("job_failed_exit3.json"), job), JobState::kFailed);
  EXPECT_EQ(final_state_of(from_fixture("job_cancelled.json"), job), JobState::kStopped);
  SlurmJob timeout = from_fixture("job_timeout.json");
  job.timeout_ms = 60'000;
  EXPECT_EQ(final_state_of(timeout, job), JobState::kTimeout);
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3600;  // $1 a second
  job.max_cost = 30;             // the cap came first
  EXPECT_EQ(final_state_of(timeout, job), JobState::kCostCap);
}

TEST(SlurmFinalState, AJobStoppedAtItsPlansDeadlineGetsThePlansState) {
  JobRecord job;
  job.timeout_ms = 3000;
  job.grace_ms = 1000;
  SlurmJob r;
  r.start_time = 100;
  r.end_time = 104;
  r.state = "FAILED";
  r.exit_code = 9;  // the enforcer's KILL
  EXPECT_EQ(final_state_of(r, job), JobState::kTimeout);
  r.exit_code = 124 << 8;  // timeout(1) after its TERM
  EXPECT_EQ(final_state_of(r, job), JobState::kTimeout);
  r.state = "CANCELLED";  // the supervisor's TERM through the signal API
  EXPECT_EQ(final_state_of(r, job), JobState::kTimeout);
  r.end_time = 101;  // long before the deadline: someone else stopped it
  EXPECT_EQ(final_state_of(r, job), JobState::kStopped);
  r.state = "FAILED";
  r.exit_code = 9;
  EXPECT_EQ(final_state_of(r, job), JobState::kFailed);
  (*job.options)["budget_cap"] = 0.001;  // a budget cell: $0.001 at $3.6/h is 1 s
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3.6;
  job.timeout_ms.reset();
  EXPECT_EQ(final_state_of(r, job), JobState::kBudget);
}

// Issue 30 case 8: an administrator lowered the limit after submit (scontrol update timelimit=1):
// Slurm's TIMEOUT came long before nodus's deadline. A timeout, with a note that says whose.
TEST(SlurmFinalState, SlurmsOwnLimitBeforeThePlansIsATimeoutThatSaysWhose) {
  JobRecord job;
  job.timeout_ms = 600'000;
  job.grace_ms = 10'000;
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3600;  // $1 a second
  job.max_cost = 300;            // the cap before the timeout: the plan is the cap's
  SlurmJob r;
  r.state = "TIMEOUT";
  r.start_time = 100;
  r.end_time = 161;
  r.time_limit_minutes = 1;
  EXPECT_EQ(final_state_of(r, job), JobState::kTimeout);
  std::string why = stopped_by_time_limit(r, job);
  EXPECT_NE(why.find("Slurm's own time limit (1 min) ended it after 61 s"), std::string::npos)
      << why;
  EXPECT_NE(why.find("submitted with 5 min): the limit was lowered after submit"),
            std::string::npos)
      << why;
  // At the plan's own moment the TIMEOUT is the plan's: the cap's, as before.
  r.end_time = 100 + 300;
  EXPECT_EQ(stopped_by_time_limit(r, job), "");
  EXPECT_EQ(final_state_of(r, job), JobState::kCostCap);
  // Not a TIMEOUT: nothing to say.
  r.end_time = 161;
  r.state = "FAILED";
  EXPECT_EQ(stopped_by_time_limit(r, job), "");
  // A job with neither cap nor timeout ran into the partition's limit.
  JobRecord unbounded;
  r.state = "TIMEOUT";
  r.time_limit_minutes = 0;
  why = stopped_by_time_limit(r, unbounded);
  EXPECT_NE(why.find("the partition's"), std::string::npos) << why;
  EXPECT_NE(why.find("the job had none"), std::string::npos) << why;
  EXPECT_EQ(final_state_of(r, unbounded), JobState::kTimeout);
}

TEST(SlurmSignalName, NamesWhatSlurmrestdAccepts) {
  EXPECT_EQ(signal_name(SIGTERM), "TERM");
  EXPECT_EQ(signal_name(SIGKILL), "KILL");
  EXPECT_EQ(signal_name(SIGUSR1), "USR1");
  EXPECT_FALSE(signal_name(0).has_value());
  EXPECT_FALSE(signal_name(SIGSEGV).has_value());
}

SlurmJob run(const char* state, double start, double end) {
  SlurmJob j;
  j.job_id = 7;
  j.state = state;
  j.start_time = start;
  j.end_time = end;
  return j;
}

TEST(SlurmRunSegments, EveryRunOfARequeuedJobIsBilled) {
  std::vector<SlurmJob> accounted = {run("REQUEUED", 100, 130), run("RUNNING", 250, 0)};
  SlurmJob live = run("RUNNING", 250, 250 + 600);  // slurmctld: end_time = the limit's end
  auto segments = run_segments(accounted, &live, 260);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].start, 100);
  EXPECT_EQ(segments[0].end, 130);
  EXPECT_EQ(segments[1].start, 250);
  EXPECT_EQ(segments[1].end, 260);  // still running: up to now
  EXPECT_EQ(total_seconds(segments), 40);
  live = run("COMPLETED", 250, 270);
  EXPECT_EQ(total_seconds(run_segments(accounted, &live, 999)), 50);
}

TEST(SlurmRunSegments, AQueuedRecordAddsNoRunOfItsOwn) {
  // Requeued and waiting: slurmctld's start_time may still be the last run's.
  std::vector<SlurmJob> accounted = {run("REQUEUED", 100, 130), run("PENDING", 0, 0)};
  SlurmJob queued = run("PENDING", 100, 0);
  EXPECT_EQ(total_seconds(run_segments(accounted, &queued, 500)), 30);
  EXPECT_EQ(total_seconds(run_segments({}, &queued, 500)), 0);
}

TEST(SlurmSuspended, AJobKilledWhileSuspendedIsHeldToItsLastStepsEnd) {
  // slurmctld: ended at its suspension (t=104); accounting: its batch step ended at 116.
  SlurmJob last = run("CANCELLED", 100, 104);
  last.suspend_time = 104;
  SlurmJob accounted = run("CANCELLED", 100, 104);
  accounted.last_step_end = 116;
  EXPECT_EQ(end_held_while_suspended(last, {accounted}), 116);
  // Accounting without the step's end yet, or another run's: slurmctld's record stands.
  EXPECT_EQ(end_held_while_suspended(last, {run("CANCELLED", 100, 104)}), std::nullopt);
  SlurmJob earlier = run("REQUEUED", 50, 60);
  earlier.last_step_end = 116;
  EXPECT_EQ(end_held_while_suspended(last, {earlier}), std::nullopt);
  // Suspended and resumed long before it ended: its end is its own, not a suspension's.
  SlurmJob resumed = last;
  resumed.suspend_time = 102;
  EXPECT_EQ(end_held_while_suspended(resumed, {accounted}), std::nullopt);
  // A step that ended in the same second as the job is no later end.
  accounted.last_step_end = 104.5;
  EXPECT_EQ(end_held_while_suspended(last, {accounted}), std::nullopt);
  // Still running (suspended now): not an end at all.
  SlurmJob suspended = run("SUSPENDED", 100, 100 + 600);
  suspended.suspend_time = 104;
  accounted.last_step_end = 116;
  EXPECT_EQ(end_held_while_suspended(suspended, {accounted}), std::nullopt);
}

TEST(SlurmRunSegments, WithoutAccountingSlurmctldsRecordIsTheBill) {
  SlurmJob done = run("CANCELLED", 100, 128);
  auto segments = run_segments({}, &done, 999);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(total_seconds(segments), 28);
  EXPECT_TRUE(run_segments({}, nullptr, 999).empty());
  // Forgotten by slurmctld: accounting alone; a run that never started is not billed.
  EXPECT_EQ(total_seconds(
                run_segments({run("COMPLETED", 10, 91), run("CANCELLED", 0, 95)}, nullptr, 999)),
            81);
}

}  // namespace
}  // namespace nodus::backend::slurm
