// Killing nodus itself must not free the job: `timeout -s KILL` on nodus's process group
// (case 1 of issue 11), around `nodus run` and around `nodus sweep`. The sentinel is in a session
// of its own, survives, and kills the job; the GPU claim is free again; the record is <= the cap.
// And the small cases (8): 200 TERM-ignoring children, a tiny cap, a cap below grace x rate.

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

const std::map<std::string, std::string> kGpus = {{"NODUS_LOCAL_GPUS", "H100:2"}};

void expect_gpus_free(const NodusHome& home) {
  auto r = home.run({"run", "--gpu", "H100:2", "--no-wait", "--", "true"}, kGpus);
  EXPECT_EQ(r.code, 0) << "both GPUs must be free again: " << r.err;
}

TEST(KillNodus, TimeoutKillOfRunsProcessGroupLeavesNothingRunning) {
  NodusHome home;
  const std::string marker = unique_marker("77771");
  auto r = run_command(home,
                       {"timeout", "-s", "KILL", "2", NODUS_BIN, "run", "--gpu", "H100",
                        "--max-cost", "1", "--", "bash", "-c", "sleep " + marker + "; echo done"},
                       kGpus);
  EXPECT_TRUE(r.code == 137 || r.code == 124) << r.code << " " << r.err;  // timeout(1)'s own
  auto left = survivors_after(marker, 5s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the job outlived nodus";
  kill_all(left);
  ASSERT_EQ(home.run({"ps", "-a"}).code, 0);  // reconciles the dead supervisor
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "lost");
  EXPECT_LE(job["cost_usd"].get<double>(), 1.0);
  const std::string cgroup = job_cgroup(job);
  if (!cgroup.empty()) {
    EXPECT_TRUE(cgroup_empty(cgroup)) << cgroup;
  }
  expect_gpus_free(home);
}

TEST(KillNodus, TimeoutKillOfSweepsProcessGroupLeavesNothingRunning) {
  NodusHome home;
  const std::string marker = unique_marker("77772");
  auto r = run_command(home,
                       {"timeout", "-s", "KILL", "3", NODUS_BIN, "sweep", "--gpu", "H100",
                        "--max-cost", "1", "--parallel", "2", "--param", "x=1,2", "--", "bash",
                        "-c", "sleep " + marker + "{x}; echo done"},
                       kGpus);
  EXPECT_TRUE(r.code == 137 || r.code == 124) << r.code << " " << r.err;  // timeout(1)'s own
  auto left = survivors_after(marker, 5s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the sweep's jobs outlived nodus";
  kill_all(left);
  ASSERT_EQ(home.run({"ps", "-a"}).code, 0);
  for (const char* id : {"1", "2"}) {
    auto job = show_json(home, id);
    EXPECT_LE(job["cost_usd"].get<double>(), 1.0) << id;
    EXPECT_NE(job["state"], "running") << id;
  }
  expect_gpus_free(home);
}

// A sweep keeps spare `nodus __supervise` processes waiting for a cell's ticket on a pipe
// (engine/cell_spawner.h). Killed alone with SIGKILL, the sweep cannot kill them: each must see
// the pipe close (no other process may hold its write end) and exit. The running cell stops
// with its sweep, as it does for a Ctrl-C.
TEST(KillNodus, ASweepKilledAloneLeavesNoSpareSupervisor) {
  NodusHome home;
  const std::string marker = unique_marker("77773");
  pid_t sweep = home.start({"sweep", "--gpu", "H100", "--max-cost", "1", "--parallel", "1",
                            "--param", "x=1,2,3", "--", "bash", "-c", "sleep " + marker + "{x}"},
                           kGpus);
  ASSERT_TRUE(wait_for_processes(marker, 1, 20s)) << read_file(home.file("started.out.err"));
  // A spare is a supervisor without a sentinel: one per running cell has one.
  auto spares = [&] {
    return static_cast<int>(supervise_processes(home).size()) -
           static_cast<int>(sentinel_processes(home).size());
  };
  int before = 0;
  for (int i = 0; i < 400 && (before = spares()) < 1; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_GE(before, 1) << "no spare supervisor started";
  ASSERT_EQ(::kill(sweep, SIGKILL), 0);
  EXPECT_EQ(wait_exit(sweep, 5s), 128 + SIGKILL);
  int after = before;
  for (int i = 0; i < 200 && (after = spares()) > 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(after, 0) << "spare supervisors outlived the sweep by 10 s";
  auto left = survivors_after(marker, 10s);
  EXPECT_TRUE(left.empty()) << "the running cell outlived its sweep by 10 s";
  kill_all(left);
  std::printf("sweep SIGKILLed with %d spare supervisor(s) waiting: none left\n", before);
}

TEST(SmallCaps, TwoHundredTermIgnoringChildrenEndWithinTheCap) {
  NodusHome home;
  const std::string prices = write_test_prices(home);  // TEST: $1 a second
  const std::string marker = unique_marker("77778");
  auto env =
      std::map<std::string, std::string>{{"NODUS_LOCAL_GPUS", "TEST:4"}, {"NODUS_PRICES", prices}};
  auto r =
      home.run({"run", "--gpu", kTestGpu, "--max-cost", "2", "--grace", "500ms", "--", "bash", "-c",
                "for i in $(seq 200); do (trap '' TERM; exec sleep " + marker +
                    ") & done; trap '' TERM; wait"},
               env);
  EXPECT_EQ(r.code, 122) << r.err;
  auto left = survivors_after(marker, 3s);
  EXPECT_TRUE(left.empty()) << left.size() << " children survived";
  kill_all(left);
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "cost-cap");
  EXPECT_TRUE(billed_within_cap(job, 2.0, 1.0));
  EXPECT_LE(job["wall_s"].get<double>(), 2.5) << "the kill came late";
}

// A cap smaller than starting a process takes: the job is killed at once, and billed for the
// milliseconds it ran, past the cap, with the overrun named: the provider bills what ran.
TEST(SmallCaps, ATinyCapIsBilledForWhatRanAndTheOverrunIsNamed) {
  NodusHome home;
  const std::string prices = write_test_prices(home);
  auto env =
      std::map<std::string, std::string>{{"NODUS_LOCAL_GPUS", "TEST:4"}, {"NODUS_PRICES", prices}};
  auto r =
      home.run({"run", "--gpu", kTestGpu, "--max-cost", "0.0000001", "--", "sleep", "30"}, env);
  EXPECT_EQ(r.code, 122) << r.err;
  auto job = show_json(home, "1");
  const double cost = job["cost_usd"].get<double>();
  EXPECT_GT(cost, 0.0000001) << job.dump();
  EXPECT_NEAR(cost, job["wall_s"].get<double>() * 1.0, 1e-6) << "the bill is its wall time at $1/s";
  EXPECT_TRUE(billed_within_cap(job, 0.0000001, 1.0)) << "a kill at t=0 takes well under 0.5 s";
  EXPECT_NE(job["note"].get<std::string>().find("ms past its cap: billed"), std::string::npos)
      << job.dump();
  // run's last line says it too, beside the cost.
  EXPECT_NE(r.err.find("ms past its cap: billed"), std::string::npos) << r.err;
}

TEST(SmallCaps, CapBelowGraceTimesRateWarnsWhenTermGoesOut) {
  NodusHome home;
  const std::string prices = write_test_prices(home);
  auto env =
      std::map<std::string, std::string>{{"NODUS_LOCAL_GPUS", "TEST:4"}, {"NODUS_PRICES", prices}};
  auto r = home.run(
      {"run", "--gpu", kTestGpu, "--max-cost", "1", "--grace", "10s", "--", "sleep", "30"}, env);
  EXPECT_EQ(r.code, 122) << r.err;
  EXPECT_NE(r.err.find("SIGTERM goes out at start (t=0), SIGKILL at 0.975 s"), std::string::npos)
      << r.err;
  EXPECT_NE(show_json(home, "1")["note"].get<std::string>().find("SIGTERM goes out at start"),
            std::string::npos);
}

}  // namespace
}  // namespace nodus::testing
