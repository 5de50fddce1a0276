// Issue 28, case 4: signals that are no request to stop must not take nodus down while a job
// runs. A reader that leaves early (`nodus run ... | head -2`) makes nodus's writes fail with
// EPIPE: it stops echoing and keeps supervising. A job that sends SIGUSR1, SIGUSR2, SIGALRM,
// SIGQUIT or SIGPIPE to its parent (the supervisor) changes nothing. Each time the job goes on
// and its record is right: completed, its exit code, billed for its whole run.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

const std::map<std::string, std::string> kGpus = {{"NODUS_LOCAL_GPUS", "H100:1"}};

// A job that ran `seconds` at least and ended by itself with exit code 0.
void expect_completed(const nlohmann::json& job, double seconds) {
  EXPECT_EQ(job["state"], "completed") << job.dump();
  EXPECT_EQ(job["exit_code"], 0) << job.dump();
  EXPECT_GE(job["wall_s"].get<double>(), seconds) << job.dump();
  EXPECT_GT(job["cost_usd"].get<double>(), 0) << job.dump();
}

TEST(StraySignals, AReaderThatLeavesEarlyNeitherKillsNodusNorLosesTheJob) {
  NodusHome home;
  std::string rc_file = home.file("rc");
  // The job writes far more than head reads, then goes on for a second.
  std::string pipeline =
      "{ \"$0\" run --gpu H100 -- sh -c 'yes | head -c 100000; sleep 1'; echo $? > " + rc_file +
      "; } | head -2 > /dev/null";
  auto r = run_command(home, {"sh", "-c", pipeline, NODUS_BIN}, kGpus);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(rc_file), "0\n") << "nodus's exit status (141: killed by SIGPIPE)\n" << r.err;
  EXPECT_EQ(r.err.find("Broken pipe"), std::string::npos) << r.err;
  expect_completed(show_json(home, "1"), 1.0);
}

// The job signals its parent: the launcher makes sure that is the supervisor (it checks
// getppid()), and the job writes down which pid it signalled so the test can tell.
std::string signalling_job(const std::string& ppid_file) {
  return "echo $PPID > " + ppid_file +
         "; for s in USR1 USR2 ALRM QUIT PIPE; do kill -$s $PPID; sleep 0.2; done; sleep 0.5";
}

TEST(StraySignals, AttachedRunOutlivesSignalsFromItsJob) {
  NodusHome home;
  std::string ppid_file = home.file("ppid");
  pid_t nodus =
      home.start({"run", "--gpu", "H100", "--", "sh", "-c", signalling_job(ppid_file)}, kGpus);
  int code = wait_exit(nodus, 60s);
  EXPECT_EQ(code, 0) << "128 + the signal that killed nodus";
  EXPECT_EQ(read_file(ppid_file), std::to_string(nodus) + "\n") << "the job signalled nodus";
  expect_completed(show_json(home, "1"), 1.5);
}

TEST(StraySignals, DetachedSupervisorOutlivesSignalsFromItsJob) {
  NodusHome home;
  std::string ppid_file = home.file("ppid");
  auto r =
      home.run({"run", "-d", "--gpu", "H100", "--", "sh", "-c", signalling_job(ppid_file)}, kGpus);
  ASSERT_EQ(r.code, 0) << r.err;
  auto w = home.run({"wait", "1"}, kGpus);
  EXPECT_EQ(w.code, 0) << w.err;
  auto job = show_json(home, "1");
  expect_completed(job, 1.5);
  EXPECT_FALSE(read_file(ppid_file).empty());
}

}  // namespace
}  // namespace nodus::testing
