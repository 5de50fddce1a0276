// engine::Supervisor driven through a FakeBackend (tests/engine/fake_backend.h): the branches of
// a job's run from launch to its recorded end (cap, timeout, budget share, a grace longer than
// the time left, a stop request, a backend that loses the job, a job that ignores SIGTERM),
// without real processes. What is asserted is the order of what nodus did and what it recorded;
// a bound on time is asserted only from below (a loaded machine makes nodus late, never early).

#include "engine/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>

#include "core/error.h"
#include "engine/signals.h"
#include "fake_backend.h"
#include "store/store.h"
#include "temp_dir.h"

// A FakeBackend::Script is written with designated initializers, naming only what a test
// changes; GCC 12 warns of the members left to their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace nodus::engine {
namespace {

using testing::FakeBackend;

// A one-GPU job at $3,600 an hour: a dollar a second, so a cap of $0.60 buys 0.6 s.
class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = store::Store::open(home_.db()); }

  JobRecord job() {
    JobRecord j;
    j.name = "fake";
    j.argv = {"train"};
    j.backend = "fake";
    j.gpu_type = "H100";
    j.gpu_count = 1;
    j.gpu_indices = {0};
    j.rate_per_gpu_hour = 3600;
    j.grace_ms = 200;
    j.created_at = unix_now();
    j.log_path = home_.file("job.log");
    j.state = JobState::kStarting;
    return j;
  }

  // Runs `j` to its end under `fake`; returns what `nodus run` would return, and `j` as the
  // store has it afterwards.
  int supervise(JobRecord& j, FakeBackend& fake, SuperviseRun run = {}) {
    run.attach = false;
    j.id = store_->insert_job(j);
    Supervisor supervisor(*store_, fake);
    int code = supervisor.run(j, run);
    j = *store_->job(j.id);
    return code;
  }

  nodus::testing::TempDir home_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(SupervisorTest, AJobThatEndsByItselfKeepsItsOutcome) {
  FakeBackend fake({.runs_for = 0.05, .exit_code = 0});
  JobRecord j = job();
  EXPECT_EQ(supervise(j, fake), 0);
  EXPECT_EQ(j.state, JobState::kCompleted);
  EXPECT_EQ(j.exit_code, 0);
  EXPECT_TRUE(fake.signals.empty());
  ASSERT_TRUE(j.started_at && j.ended_at);
  EXPECT_NEAR(j.cost, *j.ended_at - *j.started_at, 1e-9);  // $1 a second, all it ran

  FakeBackend failing({.runs_for = 0.05, .exit_code = 3});
  JobRecord f = job();
  EXPECT_EQ(supervise(f, failing), 3);
  EXPECT_EQ(f.state, JobState::kFailed);
  EXPECT_EQ(f.exit_code, 3);
}

TEST_F(SupervisorTest, TheCostCapStopsTheJobWithTermAndBillsWhatItRan) {
  FakeBackend fake({});
  JobRecord j = job();
  j.max_cost = 0.6;
  EXPECT_EQ(supervise(j, fake), exit_code::kCostCap);
  EXPECT_EQ(j.state, JobState::kCostCap);
  EXPECT_EQ(j.exit_code, exit_code::kCostCap);
  ASSERT_FALSE(fake.signals.empty());
  EXPECT_EQ(fake.signals.front(), SIGTERM);
  ASSERT_TRUE(fake.term_at && j.started_at && j.ended_at);
  // TERM at the cap less the grace and the kill margin, never before.
  EXPECT_GE(*fake.term_at - *j.started_at, 0.6 - 0.2 - 0.025 - 0.002);
  EXPECT_NEAR(j.cost, *j.ended_at - *j.started_at, 1e-9);
  if (j.cost > 0.6) {
    EXPECT_NE(j.note.find("past its cap"), std::string::npos) << j.note;
  }
}

TEST_F(SupervisorTest, AJobThatIgnoresTermIsKilledAfterTheGrace) {
  FakeBackend fake({.ignores_term = true});
  JobRecord j = job();
  j.timeout_ms = 300;
  EXPECT_EQ(supervise(j, fake), exit_code::kTimeout);
  EXPECT_EQ(j.state, JobState::kTimeout);
  ASSERT_FALSE(fake.signals.empty());
  EXPECT_EQ(fake.signals.front(), SIGTERM);
  EXPECT_GE(
      fake.kills + static_cast<int>(std::count(fake.signals.begin(), fake.signals.end(), SIGKILL)),
      1);
  ASSERT_TRUE(fake.term_at && fake.ended_at && j.started_at);
  EXPECT_GE(*fake.term_at - *j.started_at, 0.3 - 0.002);
  // KILL at the timeout plus the grace, never before; counted from the plan, not from a TERM
  // that a loaded machine sent late.
  EXPECT_GE(*fake.ended_at - *j.started_at, 0.3 + 0.2 - 0.002);
}

TEST_F(SupervisorTest, ASweepsBudgetShareBelowTheCapIsTheStopAndItsReason) {
  FakeBackend fake({});
  JobRecord j = job();
  j.max_cost = 50;
  SuperviseRun run;
  run.options.budget_cap = 0.5;
  EXPECT_EQ(supervise(j, fake, run), exit_code::kCostCap);
  EXPECT_EQ(j.state, JobState::kBudget);
  EXPECT_EQ(j.exit_code, exit_code::kCostCap);
  EXPECT_LT(j.cost, 50);
}

TEST_F(SupervisorTest, AGraceLongerThanTheTimeTheCapBuysIsSaidAndTermGoesOutAtStart) {
  FakeBackend fake({.ignores_term = true});
  JobRecord j = job();
  j.max_cost = 0.4;
  j.grace_ms = 10'000;
  EXPECT_EQ(supervise(j, fake), exit_code::kCostCap);
  EXPECT_EQ(j.state, JobState::kCostCap);
  EXPECT_NE(j.note.find("grace period: SIGTERM goes out at start"), std::string::npos) << j.note;
  ASSERT_FALSE(fake.signals.empty());
  EXPECT_EQ(fake.signals.front(), SIGTERM);
  ASSERT_TRUE(fake.ended_at && j.started_at);
  EXPECT_GE(*fake.ended_at - *j.started_at, 0.4 - 0.025 - 0.002);  // KILL at the cap, not at t=0
}

TEST_F(SupervisorTest, AStopRequestEndsTheJobStoppedAndCtrlCCancelled) {
  for (auto [sig, state, code] : {std::tuple{SIGTERM, JobState::kStopped, 143},
                                  std::tuple{SIGINT, JobState::kCancelled, 130}}) {
    SignalWatch signals;  // blocks the signal: it waits on the watch's descriptor
    FakeBackend fake({});
    JobRecord j = job();
    SuperviseRun run;
    run.signals = &signals;
    ASSERT_EQ(::kill(::getpid(), sig), 0);
    EXPECT_EQ(supervise(j, fake, run), code);
    EXPECT_EQ(j.state, state);
    EXPECT_EQ(j.exit_code, code);
    ASSERT_FALSE(fake.signals.empty());
    EXPECT_EQ(fake.signals.front(), SIGTERM);
  }
}

TEST_F(SupervisorTest, ABackendThatLosesTheJobKillsItAndRecordsItLost) {
  FakeBackend fake({.lost_after_waits = 0});
  JobRecord j = job();
  j.timeout_ms = 60'000;
  EXPECT_EQ(supervise(j, fake), exit_code::kNodusError);
  EXPECT_EQ(j.state, JobState::kLost);
  EXPECT_EQ(j.exit_code, exit_code::kNodusError);
  EXPECT_GE(fake.kills, 1);
  EXPECT_NE(j.note.find("fake: lost sight of the job"), std::string::npos) << j.note;
}

TEST_F(SupervisorTest, ASubmitThatFailsRecordsTheFailureWithItsCodeAndThrowsIt) {
  FakeBackend fake({.submit_error = Error::permanent("cannot run 'train': not found", 127)});
  JobRecord j = job();
  try {
    supervise(j, fake);
    FAIL() << "no Fatal";
  } catch (const Fatal& e) {
    EXPECT_EQ(e.code(), 127);
  }
  JobRecord stored = *store_->job(j.id);
  EXPECT_EQ(stored.state, JobState::kFailed);
  EXPECT_EQ(stored.exit_code, 127);
  EXPECT_NE(stored.note.find("cannot run 'train': not found"), std::string::npos);
  EXPECT_TRUE(stored.ended_at.has_value());
}

}  // namespace
}  // namespace nodus::engine
