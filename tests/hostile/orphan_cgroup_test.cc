// Both enforcers gone (issue 11): kill -9 of a detached job's supervisor and its sentinel at the
// same moment leaves the job's cgroup running with nobody to stop it. The next `nodus ps` kills
// that cgroup, bills the job to its supervisor's last heartbeat (never past its cap), says so
// in `nodus show`, and leaves no process of the job and no cgroup behind.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

TEST(OrphanCgroup, KillingSupervisorAndSentinelTogetherThenPsLeavesNothing) {
  if (!cgroups_available()) GTEST_SKIP() << "no usable cgroup v2 on this machine";
  NodusHome home;
  const std::string prices = write_test_prices(home);  // TEST: $1 a second
  const std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "TEST:4"},
                                               {"NODUS_PRICES", prices}};
  const std::string marker = unique_marker("77791");
  // The job ignores SIGTERM and re-spawns a child of its own: only a kill of the tree ends it.
  // It also makes a cgroup below its own (run as root it may), which must go with it.
  auto r = home.run({"run", "-d", "--gpu", kTestGpu, "--max-cost", "20", "--", "bash", "-c",
                     "c=$(sed -n 's/^0:://p' /proc/self/cgroup); for m in /sys/fs/cgroup/unified "
                     "/sys/fs/cgroup; do [ -f $m$c/cgroup.procs ] && { mkdir $m$c/sub; break; }; "
                     "done; trap '' TERM; while :; do sleep " +
                         marker + " & wait; done"},
                    env);
  ASSERT_EQ(r.code, 0) << r.err;
  // Its sleep: the job is past its start and made its cgroup below. Not a count of processes
  // with the marker: the shell's $(...) is a fork of it with the same command line, and killing
  // the enforcers that early kills the shell (it dies with its supervisor) before any sleep runs.
  ASSERT_TRUE(wait_for_sleeps(marker, 1, 10s)) << "the job never started";
  // Read while the supervisor lives: any nodus command that lists jobs (show too) reconciles.
  std::string cgroup = job_cgroup(show_json(home, "1"));
  for (int i = 0; i < 100 && cgroup.empty(); ++i) {  // the row is written just after the launch
    usleep(50'000);
    cgroup = job_cgroup(show_json(home, "1"));
  }
  ASSERT_FALSE(cgroup.empty());
  if (::geteuid() == 0) {
    EXPECT_EQ(::access((cgroup + "/sub").c_str(), F_OK), 0) << "the job made no cgroup below";
  }
  const pid_t supervisor = supervise_process(home);
  pid_t sentinel = sentinel_process(home);
  for (int i = 0; i < 500 && sentinel < 0; ++i) {  // named once it runs (prctl after fork)
    usleep(10'000);
    sentinel = sentinel_process(home);
  }
  ASSERT_GT(supervisor, 0);
  ASSERT_GT(sentinel, 0);
  // Stopped first, so that neither sees the other die and acts on it; then both killed.
  ASSERT_EQ(kill(sentinel, SIGSTOP), 0);
  ASSERT_EQ(kill(supervisor, SIGSTOP), 0);
  ASSERT_EQ(kill(sentinel, SIGKILL), 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  ASSERT_TRUE(wait_gone(sentinel, 5s));
  ASSERT_TRUE(wait_gone(supervisor, 5s));
  // Nobody enforces anything now: the job runs on, unsupervised.
  usleep(3'000'000);
  auto running = processes_with(marker);
  ASSERT_FALSE(running.empty()) << "the job died with its enforcers: nothing left to test";
  ASSERT_FALSE(cgroup_empty(cgroup)) << cgroup;

  ASSERT_EQ(home.run({"ps"}).code, 0);
  auto left = survivors_after(marker, 3s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the job survived `nodus ps`";
  kill_all(left);
  EXPECT_TRUE(cgroup_empty(cgroup)) << cgroup;
  EXPECT_NE(::access(cgroup.c_str(), F_OK), 0) << "the emptied cgroup was not removed: " << cgroup;

  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "lost");
  EXPECT_LE(job["cost_usd"].get<double>(), 20.0);
  EXPECT_GT(job["cost_usd"].get<double>(), 0.0);
  const std::string note = job["note"];
  EXPECT_NE(note.find("billed to its last heartbeat"), std::string::npos) << note;
  EXPECT_NE(note.find("killed (cgroup.kill)"), std::string::npos) << note;
  auto shown = home.run({"show", "1"});
  EXPECT_NE(shown.out.find("killed (cgroup.kill)"), std::string::npos) << shown.out;
}

}  // namespace
}  // namespace nodus::testing
