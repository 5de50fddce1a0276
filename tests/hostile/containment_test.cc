// Jobs that try to leave: setsid + an empty environment, a Python double fork + setsid + execve
// with an empty environment, and a "hopper" that forks, lets its parent exit, calls setsid and
// re-execs itself with an empty environment every few hops while ignoring SIGTERM (case 2 of
// issue 11). Whatever happens to the supervisor (kill -9 of an attached or a detached one, or a
// normal timeout), nothing of the job may survive: checked by the job's cgroup and by a /proc
// scan for a marker in command lines. The fallback without cgroups (NODUS_CGROUP=off) is tested
// for what it can promise.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

const std::map<std::string, std::string> kGpus = {{"NODUS_LOCAL_GPUS", "H100:2"}};

const char* kDoubleFork = R"(import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", sys.argv[1]], {})
    os._exit(0)
os.wait()
)";

const char* kHopper = R"(import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
marker, hops = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
while True:
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    hops += 1
    if hops % 3 == 0:
        os.execve(sys.executable, [sys.executable, sys.argv[0], marker, str(hops)], {})
)";

// A job that leaves three ways, then waits: M1 by setsid with an empty environment, M2 by a
// double fork, M3 the job's own sleep.
std::vector<std::string> escaping_job(const NodusHome& home, const std::string& marker) {
  write_file(home.file("escape.py"), kDoubleFork);
  return {"bash", "-c",
          "setsid env -i sleep " + marker + "1 & python3 " + home.file("escape.py") + " " + marker +
              "2; sleep " + marker + "3"};
}

void expect_nothing_left(const NodusHome& home, const std::string& marker) {
  auto left = survivors_after(marker, 5s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the job survived";
  kill_all(left);
  ASSERT_EQ(home.run({"ps", "-a"}).code, 0);
  auto job = show_json(home, "1");
  const std::string cgroup = job_cgroup(job);
  EXPECT_FALSE(cgroup.empty()) << job["note"];
  EXPECT_TRUE(cgroup_empty(cgroup)) << cgroup;
  EXPECT_LE(job["cost_usd"].get<double>(), 1.0);
  EXPECT_NE(job["state"], "running");
}

TEST(Containment, KillNineOfAttachedSupervisorTakesEscapedProcessesDown) {
  if (!cgroups_available()) GTEST_SKIP() << "no usable cgroup v2 here";
  NodusHome home;
  const std::string marker = unique_marker("77773");
  std::vector<std::string> args = {"run", "--gpu", "H100", "--max-cost", "1", "--"};
  for (auto& a : escaping_job(home, marker)) args.push_back(a);
  pid_t nodus = home.start(args, kGpus);
  ASSERT_TRUE(wait_for_processes(marker, 3, 10s)) << read_file(home.path() + "/started.out.err");
  ASSERT_EQ(kill(nodus, SIGKILL), 0);
  EXPECT_EQ(wait_exit(nodus, 5s), 128 + SIGKILL);
  expect_nothing_left(home, marker);
}

TEST(Containment, KillNineOfDetachedSupervisorTakesEscapedProcessesDown) {
  if (!cgroups_available()) GTEST_SKIP() << "no usable cgroup v2 here";
  NodusHome home;
  const std::string marker = unique_marker("77774");
  std::vector<std::string> args = {"run", "--detach", "--gpu", "H100", "--max-cost", "1", "--"};
  for (auto& a : escaping_job(home, marker)) args.push_back(a);
  auto r = home.run(args, kGpus);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(wait_for_processes(marker, 3, 10s));
  pid_t supervisor = supervise_process(home);
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  expect_nothing_left(home, marker);
}

// Three hoppers at full speed: against a /proc scan, a hop between two passes is a way out.
TEST(Containment, HopperIsStoppedByTheTimeoutFiveTimesOutOfFive) {
  if (!cgroups_available()) GTEST_SKIP() << "no usable cgroup v2 here";
  for (int trial = 0; trial < 5; ++trial) {
    NodusHome home;
    const std::string marker = unique_marker("77775");
    write_file(home.file("hopper.py"), kHopper);
    auto r =
        home.run({"run", "--gpu", "H100", "--timeout", "2s", "--grace", "500ms", "--", "bash", "-c",
                  "for k in 1 2 3; do python3 " + home.file("hopper.py") + " " + marker +
                      " & done; sleep 300"},
                 kGpus);
    EXPECT_EQ(r.code, 124) << "trial " << trial << ": " << r.err;
    auto left = survivors_after(marker, 2s);
    EXPECT_TRUE(left.empty()) << "trial " << trial << ": the hopper survived";
    for (int round = 0; round < 50 && !left.empty(); ++round) {  // it hops: again and again
      kill_all(left);
      left = processes_with(marker);
    }
    auto job = show_json(home, "1");
    EXPECT_TRUE(cgroup_empty(job_cgroup(job))) << job["note"];
  }
}

TEST(Containment, RecordSaysWhichMechanismTheJobGot) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "true"}, {{"NODUS_CGROUP", "off"}}).code, 0);
  EXPECT_NE(show_json(home, "1")["note"].get<std::string>().find(
                "contained by process group, session and /proc scan (no cgroup: cgroups "
                "disabled (NODUS_CGROUP=off))"),
            std::string::npos)
      << show_json(home, "1")["note"];
  if (!cgroups_available()) return;
  ASSERT_EQ(home.run({"run", "--", "true"}).code, 0);
  const std::string cgroup = job_cgroup(show_json(home, "2"));
  ASSERT_FALSE(cgroup.empty());
  EXPECT_FALSE(std::filesystem::exists(cgroup)) << "the job's cgroup is removed at its end";
}

TEST(Fallback, WithoutCgroupsATermIgnoringTreeIsStillKilledAtTheTimeout) {
  NodusHome home;
  const std::string marker = unique_marker("77776");
  auto r = home.run({"run", "--timeout", "1s", "--grace", "300ms", "--", "bash", "-c",
                     "for i in 1 2 3; do (trap '' TERM; exec sleep " + marker +
                         ") & done; (setsid sleep " + marker + " &); trap '' TERM; wait"},
                    {{"NODUS_CGROUP", "off"}});
  EXPECT_EQ(r.code, 124) << r.err;
  auto left = survivors_after(marker, 3s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes survived the fallback's kill";
  kill_all(left);
  EXPECT_TRUE(job_cgroup(show_json(home, "1")).empty());
}

TEST(Fallback, WithoutCgroupsTheSentinelStillKillsTheSessionWhenTheSupervisorDies) {
  NodusHome home;
  const std::string marker = unique_marker("77777");
  pid_t nodus = home.start({"run", "--", "bash", "-c", "sleep " + marker + " & sleep " + marker},
                           {{"NODUS_CGROUP", "off"}});
  // Both sleeps: nodus's own command line holds the marker, and so did the forked sentinel's
  // (now `nodus __sentinel`), so "two processes" could be met before the job had started.
  ASSERT_TRUE(wait_for_sleeps(marker, 2, 10s));
  ASSERT_EQ(kill(nodus, SIGKILL), 0);
  EXPECT_EQ(wait_exit(nodus, 5s), 128 + SIGKILL);
  auto left = survivors_after(marker, 5s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes survived";
  kill_all(left);
}

}  // namespace
}  // namespace nodus::testing
