// Bills from what ran, not from heartbeats (issue 27, case 2): a job whose supervisor dies runs
// until its sentinel kills the tree, and the sentinel writes down when (end_time_path,
// core/job.h). With heartbeats an hour apart the last one is the job's start; the bill must
// still cover every second the job ran.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <thread>

#include "cli/fixtures.h"
#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(BillWhatRan, AJobWhoseSupervisorIsKilledIsBilledUntilItsSentinelKilledIt) {
  NodusHome home;
  const std::string marker = unique_marker("82001");
  const std::string started = home.file("started");
  const std::string script = home.file("job.sh");
  write_file(script, "touch " + started + "; sleep " + marker + "\n");
  // $1 a second (TEST:4); heartbeats an hour apart.
  const std::map<std::string, std::string> env = {{"NODUS_LOCAL_GPUS", "TEST:4"},
                                                  {"NODUS_PRICES", write_test_prices(home)}};
  auto r = home.run({"run", "-d", "--gpu", kTestGpu, "--max-cost", "60", "--sample-interval", "1h",
                     "--", "bash", script},
                    env);
  ASSERT_EQ(r.code, 0) << r.err;
  for (int i = 0; i < 400 && !exists(started); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(exists(started));
  std::this_thread::sleep_for(2s);  // it runs at least this long
  const pid_t supervisor = supervise_process(home);
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(::kill(supervisor, SIGKILL), 0);
  auto left = survivors_after(marker, 10s);
  EXPECT_TRUE(left.empty()) << "the sentinel did not kill the job";
  kill_all(left);
  ASSERT_EQ(home.run({"ps", "-a"}).code, 0);  // reconciles the dead supervisor
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "lost") << job.dump();
  EXPECT_GE(job["cost_usd"].get<double>(), 2.0) << "billed less than it ran: " << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("its sentinel killed the job"), std::string::npos)
      << job.dump();
}

}  // namespace
}  // namespace nodus::testing
