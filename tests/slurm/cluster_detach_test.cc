// Jobs nobody watches: `nodus ps` refreshes them from Slurm, and finds by name the ones whose
// Slurm id never reached the store.

#include <gtest/gtest.h>

#include "billing/catalog.h"
#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;

TEST(SlurmClusterDetach, RefreshFollowsAJobToItsEndAndBillsSlurmsTimes) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  JobRecord job = new_job({"sleep", "3"}, dir);
  job.gpu_type = "L4";
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3600;
  {
    auto submitter = cluster_backend(settings);  // `nodus run --detach` returns at once
    ASSERT_TRUE(submitter->submit(job, quiet()).ok());
  }
  job.state = JobState::kStarting;
  auto ps = cluster_backend(settings);
  bool saw_running = false;
  for (int i = 0; i < 150 && !is_final(job.state); ++i) {
    auto changed = ps->refresh(job);
    ASSERT_TRUE(changed.ok()) << changed.error().message;
    if (job.state == JobState::kRunning) {
      saw_running = true;
      EXPECT_TRUE(job.started_at.has_value());
      EXPECT_GE(job.cost, 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(saw_running);
  ASSERT_EQ(job.state, JobState::kCompleted);
  EXPECT_EQ(job.exit_code, 0);
  ASSERT_TRUE(job.started_at && job.ended_at);
  EXPECT_GE(*job.ended_at - *job.started_at, 2.0);
  EXPECT_DOUBLE_EQ(job.cost, billing::cost_usd(1, 3600, *job.ended_at - *job.started_at));
}

TEST(SlurmClusterDetach, JobWhoseIdWasLostIsFoundByName) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  JobRecord job = new_job({"sleep", "60"}, dir);
  ASSERT_TRUE(cluster_backend(settings)->submit(job, quiet()).ok());
  const std::string slurm_id = job.backend_id;
  job.backend_id.clear();  // as if nodus died between submit and recording the id
  job.state = JobState::kWaiting;
  auto ps = cluster_backend(settings);
  auto changed = ps->refresh(job);
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  EXPECT_TRUE(*changed);
  EXPECT_EQ(job.backend_id, slurm_id);

  JobRecord lost = job;
  lost.backend_id.clear();
  ASSERT_TRUE(ps->kill(lost).ok());  // stop finds it by name too
  EXPECT_EQ(lost.backend_id, slurm_id);
  auto outcome = wait_to_end(*ps, job, 10);
  ASSERT_TRUE(outcome);
  // SIGKILL when it already ran (a kill is SIGKILL, as for local jobs); a cancel's TERM when
  // Slurm had it still queued.
  EXPECT_TRUE(outcome->exit_code == 137 || outcome->exit_code == 143) << outcome->exit_code;
}

}  // namespace
}  // namespace nodus::backend::slurm
