// engine::reconcile: what `ps`, `show`, `stop`, `cost` and `sweeps` call first. A local job whose
// supervisor is gone is settled (lost, billed to its heartbeat, GPUs freed); a live one is not
// touched.

#include "engine/reconcile.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "backend/local/cgroup.h"
#include "store/store.h"
#include "temp_dir.h"

namespace nodus::engine {
namespace {

using testing::TempDir;

JobRecord local_running(int64_t supervisor_pid, int64_t supervisor_start, double started_at) {
  JobRecord j;
  j.name = "r";
  j.argv = {"sleep", "1000"};
  j.backend = "local";
  j.state = JobState::kRunning;
  j.gpu_type = "H100";
  j.gpu_count = 1;
  j.gpu_indices = {0};
  j.rate_per_gpu_hour = 3600;  // $1 a second
  j.started_at = started_at;
  j.created_at = started_at;
  j.supervisor_pid = supervisor_pid;
  j.supervisor_start = supervisor_start;
  return j;
}

TEST(Reconcile, DeadLocalSupervisorMakesTheJobLostAndFreesItsGpu) {
  TempDir home;
  auto store = store::Store::open(home.db());
  const double start = unix_now() - 60;
  int64_t id = store->insert_job(local_running(1, 12345, start));  // pid 1 never has that start
  // The claim's owner is alive (this test), so only reconcile's release can free it.
  std::vector<store::Gpu> inventory = {{0, "H100", "H100", ""}};
  const int64_t me = ::getpid();
  ASSERT_TRUE(store->claim_gpus(id, "H100", 1, inventory, me, store::process_start_time(me)));
  ASSERT_EQ(store->claimed_gpus(), std::vector<int>{0});
  store::Store::SeriesBatch beat;
  beat.heartbeat = start + 2;
  store->write_tick(id, beat);

  reconcile(*store);
  JobRecord job = *store->job(id);
  EXPECT_EQ(job.state, JobState::kLost);
  EXPECT_NEAR(job.cost, 2.0, 1e-9);  // to the heartbeat, not the minute since
  EXPECT_TRUE(store->claimed_gpus().empty());
}

TEST(Reconcile, LiveSupervisorIsLeftAlone) {
  TempDir home;
  auto store = store::Store::open(home.db());
  const int64_t me = ::getpid();
  int64_t id = store->insert_job(local_running(me, store::process_start_time(me), unix_now()));
  reconcile(*store);
  EXPECT_EQ(store->job(id)->state, JobState::kRunning);
}

// Supervisor and sentinel both gone, the job's cgroup still running: reconcile kills it, removes
// it and says so in the note, and the job is billed to the heartbeat like any lost job.
TEST(Reconcile, OrphanedCgroupIsKilledRemovedAndNoted) {
  std::string why;
  auto parent = backend::local::cgroup_parent(&why);
  if (!parent) GTEST_SKIP() << "no usable cgroup here: " << why;
  auto made = backend::local::JobCgroup::create(*parent,
                                                "job-reconcile-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(made.ok()) << made.error().message;
  backend::local::JobCgroup cgroup = std::move(*made);
  const std::string path = cgroup.path();
  pid_t child = ::fork();
  if (child == 0) {  // joins the cgroup, then runs on with nobody to stop it
    if (::write(cgroup.procs_fd(), "0", 1) != 1) ::_exit(99);
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(child, 0);
  for (int i = 0; i < 200 && !cgroup.populated(); ++i) ::usleep(5'000);
  ASSERT_TRUE(cgroup.populated());

  TempDir home;
  auto store = store::Store::open(home.db());
  const double start = unix_now() - 30;
  JobRecord job = local_running(1, 12345, start);
  job.note = "contained by cgroup " + path;
  job.max_cost = 5;
  int64_t id = store->insert_job(job);
  reconcile(*store);

  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the emptied cgroup is still there: " << path;
  JobRecord after = *store->job(id);
  EXPECT_EQ(after.state, JobState::kLost);
  EXPECT_LE(after.cost, 5.0);  // no heartbeat: billed to when it was found, capped
  EXPECT_NE(after.note.find("killed (cgroup.kill)"), std::string::npos) << after.note;
  EXPECT_NE(after.note.find("contained by cgroup " + path), std::string::npos) << after.note;
}

}  // namespace
}  // namespace nodus::engine
