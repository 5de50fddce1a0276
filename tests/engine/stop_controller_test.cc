// The stop controller on a fake clock: every branch of the plan (cap, timeout, budget, grace
// shorter than the time left, a cap below grace x rate), stop requests (SIGINT twice, SIGTERM,
// a policy stop), a lost backend, a failed SIGTERM, and the reason an exit is recorded with.

#include "engine/stop_controller.h"

#include <gtest/gtest.h>

#include <csignal>

namespace nodus::engine {
namespace {

using billing::kKillMargin;
using billing::plan_stop;
using namespace std::chrono_literals;
using Time = StopController::Time;

const Time t0 = Time() + 1000s;  // the fake clock's start of the job

// Deadlines come from double seconds: equal to the nanosecond's rounding.
::testing::AssertionResult near(std::optional<Time> got, Time want) {
  if (!got) return ::testing::AssertionFailure() << "no deadline";
  auto d = *got > want ? *got - want : want - *got;
  if (d <= std::chrono::microseconds(1)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "off by " << std::chrono::duration_cast<std::chrono::nanoseconds>(d).count() << " ns";
}

JobRecord job_with(int gpus, double rate, int grace_ms) {
  JobRecord j;
  j.gpu_count = gpus;
  j.rate_per_gpu_hour = rate;
  j.grace_ms = grace_ms;
  return j;
}

TEST(StopController, NoPlanNoDeadlines) {
  StopController c(std::nullopt, 10s);
  c.arm(t0);
  EXPECT_FALSE(c.next_deadline());
  EXPECT_EQ(c.on_time(t0 + 100h), StopAction{});
  EXPECT_FALSE(c.on_exit(t0 + 100h));
}

TEST(StopController, CapSendsTermGraceBeforeAndKillAtTheCap) {
  JobRecord j = job_with(1, 3600, 2000);  // $1 per second
  j.max_cost = 10;                        // the cap at 10 s
  auto plan = plan_stop(j, std::nullopt);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->reason, JobState::kCostCap);
  StopController c(plan, 2s);
  c.arm(t0);
  const Time kill = t0 + std::chrono::duration_cast<Time::duration>(10s - kKillMargin);
  EXPECT_TRUE(near(c.kill_at(), kill));
  EXPECT_TRUE(near(c.term_at(), kill - 2s));
  EXPECT_EQ(c.next_deadline(), c.term_at());
  EXPECT_EQ(c.on_time(kill - 2s - 1ms), StopAction{});
  StopAction term = c.on_time(*c.term_at());
  EXPECT_TRUE(term.term);
  EXPECT_FALSE(term.kill);
  EXPECT_EQ(c.reason(), JobState::kCostCap);
  EXPECT_TRUE(near(c.next_deadline(), kill));
  EXPECT_EQ(c.on_time(kill - 1ms), StopAction{});
  StopAction k = c.on_time(kill + 1us);
  EXPECT_TRUE(k.kill);
  EXPECT_FALSE(c.next_deadline());
  EXPECT_EQ(c.on_time(kill + 1s), StopAction{});  // once
  EXPECT_EQ(c.on_exit(kill + 1ms), JobState::kCostCap);
}

TEST(StopController, TimeoutSendsTermAtTheTimeoutAndKillGraceLater) {
  JobRecord j = job_with(0, 0, 3000);
  j.timeout_ms = 5000;
  auto plan = plan_stop(j, std::nullopt);
  StopController c(plan, 3s);
  c.arm(t0);
  EXPECT_TRUE(near(c.term_at(), t0 + 5s));
  EXPECT_TRUE(near(c.kill_at(), t0 + 8s));
  EXPECT_TRUE(c.on_time(*c.term_at()).term);
  EXPECT_TRUE(c.on_time(*c.kill_at()).kill);
  EXPECT_EQ(c.reason(), JobState::kTimeout);
}

TEST(StopController, BudgetShareBelowTheCapIsTheReason) {
  JobRecord j = job_with(1, 3600, 1000);
  j.max_cost = 100;
  auto plan = plan_stop(j, 5.0);
  StopController c(plan, 1s);
  c.arm(t0);
  EXPECT_TRUE(near(c.kill_at(), t0 + std::chrono::duration_cast<Time::duration>(5s - kKillMargin)));
  EXPECT_TRUE(c.on_time(*c.term_at()).term);
  EXPECT_EQ(c.reason(), JobState::kBudget);
  EXPECT_FALSE(plan_warning(plan, 1s));
}

TEST(StopController, EarliestOfTimeoutAndCapWins) {
  JobRecord j = job_with(1, 3600, 1000);
  j.max_cost = 100;     // 100 s
  j.timeout_ms = 4000;  // 4 s
  auto plan = plan_stop(j, std::nullopt);
  EXPECT_EQ(plan->reason, JobState::kTimeout);
}

TEST(StopController, JobEndingBeforeAnyDeadlineKeepsItsOwnExit) {
  JobRecord j = job_with(1, 3600, 1000);
  j.max_cost = 10;
  StopController c(plan_stop(j, std::nullopt), 1s);
  c.arm(t0);
  EXPECT_FALSE(c.on_exit(t0 + 3s));
}

TEST(StopController, ExitAfterTheTermWasDueIsThatStopEvenIfNobodyHereSentIt) {
  // The sentinel (or a late loop) sent it: the reason is still the cap.
  JobRecord j = job_with(1, 3600, 1000);
  j.max_cost = 10;
  StopController c(plan_stop(j, std::nullopt), 1s);
  c.arm(t0);
  EXPECT_EQ(c.on_exit(*c.term_at() + 1ms), JobState::kCostCap);
}

TEST(StopController, CapBelowGraceTimesRateTermsAtStartAndWarns) {
  JobRecord j = job_with(1, 3600, 10'000);  // 10 s grace at $1/s
  j.max_cost = 2;                           // 2 s of GPU
  auto plan = plan_stop(j, std::nullopt);
  StopController c(plan, 10s);
  c.arm(t0);
  EXPECT_TRUE(near(c.term_at(), t0));
  auto warning = plan_warning(plan, 10s);
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("SIGTERM goes out at start (t=0)"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("SIGKILL at 1.975 s"), std::string::npos) << *warning;
  EXPECT_TRUE(c.on_time(t0).term);
  EXPECT_TRUE(c.on_time(t0 + 1975ms).kill);
}

TEST(StopController, TinyCapKillsAtStart) {
  JobRecord j = job_with(1, 2.49, 10'000);
  j.max_cost = 0.0000001;  // 0.14 ms of one GPU
  auto plan = plan_stop(j, std::nullopt);
  StopController c(plan, 10s);
  c.arm(t0);
  EXPECT_TRUE(near(c.kill_at(), t0));
  StopAction a = c.on_time(*c.kill_at());
  EXPECT_TRUE(a.kill);  // the kill supersedes the TERM
  EXPECT_TRUE(plan_warning(plan, 10s));
}

TEST(StopController, TimeoutNeverWarns) {
  JobRecord j = job_with(1, 3600, 10'000);
  j.timeout_ms = 1;
  EXPECT_FALSE(plan_warning(plan_stop(j, std::nullopt), 10s));
}

// --gpu H100:8 --max-cost 5 --timeout 2h at $2.60/GPU-hour: the cap's SIGTERM comes at 855 s,
// so the timeout can never act, and the warning says so before the run.
TEST(StopController, ATimeoutTheCapAlwaysBeatsIsSaidNeverToAct) {
  JobRecord j = job_with(8, 2.60, 10'000);
  j.max_cost = 5;
  j.timeout_ms = 2 * 3600 * 1000;
  auto plan = plan_stop(j, std::nullopt);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->reason, JobState::kCostCap);
  auto warning = plan_warning(plan, 10s, std::chrono::milliseconds(*j.timeout_ms));
  ASSERT_TRUE(warning);
  EXPECT_EQ(*warning,
            "--timeout 2h00m never acts: --max-cost stops the job first (SIGTERM at 14m15s, "
            "SIGKILL at 14m25s)");
  // A timeout the cap does not beat is the plan itself: nothing to say.
  j.timeout_ms = 60'000;
  EXPECT_FALSE(plan_warning(plan_stop(j, std::nullopt), 10s, std::chrono::milliseconds(60'000)));
}

TEST(StopController, StopRequestTermsNowAndKillsAfterGraceWhenTimeLeftIsLonger) {
  JobRecord j = job_with(1, 3600, 2000);
  j.max_cost = 100;  // far away
  StopController c(plan_stop(j, std::nullopt), 2s);
  c.arm(t0);
  StopAction a = c.on_signal(SIGTERM, t0 + 1s);
  EXPECT_TRUE(a.term);
  EXPECT_NE(a.note.find("SIGKILL after"), std::string::npos);
  EXPECT_EQ(c.reason(), JobState::kStopped);
  EXPECT_TRUE(near(c.kill_at(), t0 + 3s));  // grace, shorter than the time left
  EXPECT_TRUE(c.on_time(t0 + 3s).kill);
  EXPECT_EQ(c.on_exit(t0 + 3s), JobState::kStopped);
}

TEST(StopController, StopRequestKeepsThePlansKillWhenItComesFirst) {
  JobRecord j = job_with(1, 3600, 5000);
  j.max_cost = 10;  // kill at 9.975 s
  StopController c(plan_stop(j, std::nullopt), 5s);
  c.arm(t0);
  c.on_signal(SIGHUP, t0 + 9s);
  EXPECT_TRUE(
      near(c.kill_at(), t0 + std::chrono::duration_cast<Time::duration>(10s - kKillMargin)));
  EXPECT_EQ(c.reason(), JobState::kStopped);  // the first reason wins
}

TEST(StopController, SecondInterruptKillsAtOnce) {
  StopController c(std::nullopt, 30s);
  c.arm(t0);
  StopAction first = c.on_signal(SIGINT, t0 + 1s);
  EXPECT_TRUE(first.term);
  EXPECT_FALSE(first.kill);
  StopAction second = c.on_signal(SIGINT, t0 + 2s);
  EXPECT_TRUE(second.kill);
  EXPECT_EQ(second.note, "interrupted again: killing the job now");
  EXPECT_EQ(c.reason(), JobState::kCancelled);
  EXPECT_EQ(c.on_signal(SIGINT, t0 + 3s), StopAction{});
}

TEST(StopController, RequestBeforeStartIsKeptWhenTheJobStarts) {
  JobRecord j = job_with(1, 3600, 1000);
  j.max_cost = 100;
  StopController c(plan_stop(j, std::nullopt), 1s);
  StopAction a = c.on_signal(SIGTERM, t0);  // still queued (Slurm)
  EXPECT_TRUE(a.term);
  c.arm(t0 + 5s);
  EXPECT_TRUE(near(c.kill_at(), t0 + 1s));
}

TEST(StopController, PolicyStopOnlyOnce) {
  StopController c(std::nullopt, 1s);
  c.arm(t0);
  StopAction a = c.on_policy(JobState::kLowUtil, "GPU idle", t0 + 1s);
  EXPECT_TRUE(a.term);
  EXPECT_EQ(a.note, "stopping: GPU idle");
  EXPECT_EQ(c.on_policy(JobState::kLowUtil, "GPU idle", t0 + 2s), StopAction{});
  EXPECT_EQ(c.reason(), JobState::kLowUtil);
}

TEST(StopController, LostBackendKillsAndRecordsLost) {
  JobRecord j = job_with(1, 3600, 1000);
  j.max_cost = 100;
  StopController c(plan_stop(j, std::nullopt), 1s);
  c.arm(t0);
  StopAction a = c.on_lost("slurmrestd unreachable");
  EXPECT_TRUE(a.kill);
  EXPECT_EQ(c.reason(), JobState::kLost);
  EXPECT_FALSE(c.next_deadline());
}

TEST(StopController, FailedTermEscalatesToKill) {
  StopController c(std::nullopt, 10s);
  c.arm(t0);
  c.on_signal(SIGTERM, t0);
  StopAction a = c.on_term_failed("no such process");
  EXPECT_TRUE(a.kill);
  EXPECT_NE(a.note.find("no such process"), std::string::npos);
  EXPECT_FALSE(c.next_deadline());
  EXPECT_EQ(c.on_term_failed("again"), StopAction{});
}

}  // namespace
}  // namespace nodus::engine
