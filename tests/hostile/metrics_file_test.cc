// Case 3 of issue 11: the job owns its $NODUS_METRICS path and can put anything there. Before the
// fix a FIFO made the supervisor block in open(): --timeout, --max-cost and `nodus stop` were
// never enforced. Now it is refused with a note and never waited on. Also case 5: a
// --metric-regex that backtracks catastrophically, and an invalid one.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/fixtures.h"
#include "input_util.h"

namespace nodus::testing {
namespace {

struct Ended {
  int code = -1;
  double wall = 0;
  nlohmann::json job;
  size_t left = 0;
};

// Runs nodus to its end, but never longer than `limit`: a hung supervisor fails the test
// instead of hanging it.
Ended run_bounded(const NodusHome& home, const std::vector<std::string>& args,
                  const std::string& marker, std::chrono::seconds limit) {
  Ended e;
  double t0 = now_seconds();
  pid_t pid = home.start(args, {}, home.file("run.out"));
  e.code = wait_exit(pid, limit);
  e.wall = now_seconds() - t0;
  if (e.code == -1) {
    kill(pid, SIGKILL);
    wait_exit(pid, std::chrono::seconds(10));
  }
  e.left = survivors(marker);
  e.job = nlohmann::json::parse(home.run({"show", "1", "--format", "json"}).out, nullptr, false);
  return e;
}

TEST(MetricsFile, FifoIsRefusedAndTheTimeoutHolds) {
  NodusHome home;
  std::string marker = unique_marker();
  auto e = run_bounded(
      home,
      {"run", "--timeout", "2s", "--grace", "500ms", "--env", "MARKER=" + marker, "--", "bash",
       "-c", "rm -f \"$NODUS_METRICS\"; mkfifo \"$NODUS_METRICS\"; sleep 1000", marker},
      marker, std::chrono::seconds(20));
  EXPECT_EQ(e.code, 124) << "the timeout's exit status (-1: nodus hung)";
  EXPECT_LT(e.wall, 2.5 + 3);
  EXPECT_EQ(e.left, 0u);
  ASSERT_TRUE(e.job.is_object());
  EXPECT_EQ(e.job["state"], "timeout");
  std::string note = e.job["stats"].value("metrics_note", "");
  EXPECT_NE(note.find("is a FIFO: not read"), std::string::npos) << note;
  // `nodus show` prints it as one line.
  auto shown = home.run({"show", "1"});
  EXPECT_NE(shown.out.find("is a FIFO"), std::string::npos) << shown.out;
}

TEST(MetricsFile, StopWorksWhileTheMetricsPathIsAFifo) {
  NodusHome home;
  std::string marker = unique_marker();
  auto r =
      home.run({"run", "--detach", "--grace", "500ms", "--env", "MARKER=" + marker, "--", "bash",
                "-c", "rm -f \"$NODUS_METRICS\"; mkfifo \"$NODUS_METRICS\"; sleep 1000", marker});
  ASSERT_EQ(r.code, 0) << r.err;
  usleep(2'500'000);  // a few ticks with the FIFO in place
  auto stop = home.run({"stop", "1"});
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_LT(stop.seconds, 10);
  EXPECT_EQ(survivors(marker), 0u);
  auto j = show_json(home, "1");
  EXPECT_EQ(j["state"], "stopped");
}

TEST(MetricsFile, SymlinkToADeviceIsRefusedAndAReplacedFileIsRead) {
  NodusHome home;
  std::string marker = unique_marker();
  // First a symlink to /dev/zero (endless if followed): refused for good, the job ends normally.
  auto e = run_bounded(home,
                       {"run", "--env", "MARKER=" + marker, "--", "bash", "-c",
                        "ln -sf /dev/zero \"$NODUS_METRICS\"; sleep 1.5", marker},
                       marker, std::chrono::seconds(20));
  EXPECT_EQ(e.code, 0);
  EXPECT_NE(e.job["stats"].value("metrics_note", "").find("is a symbolic link"), std::string::npos);

  // A job that rewrites its file by renaming a new one over it: the new file is read from its
  // start, and only believable values count.
  NodusHome home2;
  auto r = home2.run(
      {"run", "--", "bash", "-c",
       "echo '{\"samples_per_sec\": 100}' > \"$NODUS_METRICS\"; sleep 1.5; "
       "printf '{\"samples_per_sec\": 300}\\n{\"samples_per_sec\": 300}\\n{\"data_wait\": 7}\\n"
       "{\"samples_per_sec\": -4}\\n' > \"$NODUS_METRICS.new\"; "
       "mv \"$NODUS_METRICS.new\" \"$NODUS_METRICS\"; sleep 1.5"});
  EXPECT_EQ(r.code, 0) << r.err;
  auto j = show_json(home2, "1");
  const auto& stats = j["stats"];
  EXPECT_DOUBLE_EQ(stats.value("throughput", 0.0), 300);  // after the first report: 300, 300
  EXPECT_EQ(stats["metrics"]["malformed_values"], 2);     // data_wait 7, samples_per_sec -4
  EXPECT_NE(stats.value("metrics_note", "").find("replaced 1 time"), std::string::npos)
      << stats.dump();
}

// Issue 28, case 6: links planted in the store's folders. A link at a future job's metrics path
// is replaced by a new file before the job starts, so the job's metrics never go through it; a
// logs/ folder replaced by a link is refused (exit 125), and what it points to keeps its mode.
TEST(MetricsFile, PlantedLinksAreNeitherWrittenThroughNorChmodded) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "true"}).code, 0);
  const std::string target = home.file("elsewhere.jsonl");
  ASSERT_EQ(symlink(target.c_str(), home.file("metrics/2.jsonl").c_str()), 0);
  auto r = home.run({"run", "--", "sh", "-c",
                     "echo '{\"samples_per_sec\": 5}' >> \"$NODUS_METRICS\"; sleep 1.2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(target)) << "the job wrote through the planted link";
  EXPECT_DOUBLE_EQ(show_json(home, "2")["stats"].value("throughput", 0.0), 5);

  const std::string outside = home.file("outside");
  std::filesystem::create_directory(outside);
  std::filesystem::permissions(outside, std::filesystem::perms(0755));
  std::filesystem::remove_all(home.file("logs"));
  ASSERT_EQ(symlink(outside.c_str(), home.file("logs").c_str()), 0);
  auto refused = home.run({"run", "--", "true"});
  EXPECT_EQ(refused.code, 125) << refused.err;
  EXPECT_NE(refused.err.find("is a symbolic link"), std::string::npos) << refused.err;
  EXPECT_EQ(static_cast<int>(std::filesystem::status(outside).permissions()), 0755);
  EXPECT_TRUE(std::filesystem::is_empty(outside));
}

TEST(MetricRegex, CatastrophicPatternDoesNotStallTheSupervisor) {
  NodusHome home;
  std::string marker = unique_marker();
  auto e =
      run_bounded(home,
                  {"run", "--timeout", "3s", "--grace", "500ms", "--metric-regex", "x=(a+)+b",
                   "--env", "MARKER=" + marker, "--", "bash", "-c",
                   "for i in $(seq 50); do printf 'a%.0s' {1..34}; echo; done; sleep 1000", marker},
                  marker, std::chrono::seconds(30));
  EXPECT_EQ(e.code, 124) << "-1: nodus hung in backtracking";
  EXPECT_LT(e.wall, 3.5 + 3);
  EXPECT_EQ(e.left, 0u);
}

TEST(MetricRegex, InvalidRegexIsAnErrorBeforeAnythingRuns) {
  NodusHome home;
  std::string marker = unique_marker();
  auto r = home.run({"run", "--metric-regex", "ok=([0-9]+)", "--metric-regex", "loss=([0-9]+", "--",
                     "bash", "-c", "echo ran > " + home.file("ran"), marker});
  EXPECT_EQ(r.code, 125) << r.err;
  EXPECT_NE(r.err.find("--metric-regex 'loss=([0-9]+'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(home.file("ran"))) << "the job ran";
  auto ps = home.run({"ps", "-a", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(ps.out).size(), 0u) << "a job row was stored";
  // A sweep too.
  auto s = home.run({"sweep", "--param", "i=1,2", "--metric-regex", "x=(?<n>1)", "--", "true"});
  EXPECT_EQ(s.code, 125) << s.err;
}

}  // namespace
}  // namespace nodus::testing
