// Case 4 of issue 11: a job that floods what the supervisor reads (output lines matched by
// --metric-regex, JSON lines in $NODUS_METRICS) must not push the job past its cap, nor grow the
// supervisor's memory or the store without bound. The job ignores SIGTERM, so only the SIGKILL at
// the cap deadline ends it: the supervisor has to be on time while it is being flooded.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/fixtures.h"
#include "input_util.h"

namespace nodus::testing {
namespace {

constexpr double kCap = 0.01;
constexpr long kRssBoundKiB = 64 * 1024;       // 2.5 GB before the fix
constexpr uint64_t kStoreBound = 64ull << 20;  // 1.4 GB before the fix
// Ended within this of the cap deadline (6.92 s): before the fix it took 24.8-30.7 s.
constexpr double kLateBound = 3.0;

struct Flooded {
  int code = -1;
  double wall = 0;  // nodus's own, from start to exit
  long peak_kib = 0;
  size_t left = 0;
  nlohmann::json job;
  uint64_t store = 0;
};

Flooded flood(const NodusHome& home, std::vector<std::string> args, const std::string& marker) {
  PeakRss rss(home.path());
  double t0 = now_seconds();
  // The attached run copies the flood to its stdout: into /dev/null, through a link (start()
  // puts stderr next to the path it is given).
  std::string out = home.file("flood.out");
  std::filesystem::create_symlink("/dev/null", out);
  pid_t pid = home.start(args, {{"NODUS_LOCAL_GPUS", "H100:2"}}, out);
  Flooded f;
  f.code = wait_exit(pid, std::chrono::seconds(60));
  f.wall = now_seconds() - t0;
  if (f.code == -1) {
    kill(pid, SIGKILL);
    wait_exit(pid, std::chrono::seconds(10));
  }
  f.peak_kib = rss.stop();
  f.left = survivors(marker);
  auto shown = home.run({"show", "1", "--format", "json"});
  f.job = nlohmann::json::parse(shown.out, nullptr, false);
  f.store = store_bytes(home);
  return f;
}

void expect_held(const Flooded& f) {
  EXPECT_EQ(f.code, 122) << "the cost cap's exit status";
  EXPECT_LE(f.wall, seconds_for(kCap, 2) + kLateBound);
  EXPECT_EQ(f.left, 0u) << "processes of the job survived";
  ASSERT_TRUE(f.job.is_object());
  EXPECT_EQ(f.job["state"], "cost-cap");
  EXPECT_TRUE(billed_within_cap(f.job, kCap, kCap / seconds_for(kCap, 2)));
  EXPECT_GT(f.peak_kib, 0) << "the supervisor was never seen";
  EXPECT_LT(f.peak_kib, kRssBoundKiB) << "supervisor peak RSS (KiB)";
  EXPECT_LT(f.store, kStoreBound) << "store bytes";
  std::printf(
      "[ measured ] wall %.2f s (cap at %.2f s), cost $%.5f, supervisor VmHWM %ld KiB, "
      "store %llu bytes\n",
      f.wall, seconds_for(kCap, 2), f.job["cost_usd"].get<double>(), f.peak_kib,
      static_cast<unsigned long long>(f.store));
}

TEST(InputFlood, RegexMatchedOutputFloodEndsAtTheCap) {
  NodusHome home;
  std::string marker = unique_marker();
  auto f = flood(home,
                 {"run", "--gpu", "H100:2", "--max-cost", "0.01", "--grace", "1s", "--metric-regex",
                  "x=y ([0-9]+)", "--env", "MARKER=" + marker, "--", "bash", "-c",
                  "trap '' TERM; yes 'y 123'", marker},
                 marker);
  expect_held(f);
  ASSERT_TRUE(f.job["stats"].contains("metrics"));
  const auto& m = f.job["stats"]["metrics"];
  // The flood was sampled and coalesced, and says so.
  EXPECT_GT(m["lines_scanned"].get<uint64_t>(), 0u);
  EXPECT_GT(m["lines_unscanned"].get<uint64_t>() + m["coalesced"].get<uint64_t>(), 0u);
  EXPECT_NE(f.job["stats"].value("metrics_note", "").find("coalesced"), std::string::npos);
}

TEST(InputFlood, MetricsFileFloodEndsAtTheCap) {
  NodusHome home;
  std::string marker = unique_marker();
  auto f = flood(home,
                 {"run", "--gpu", "H100:2", "--max-cost", "0.01", "--grace", "1s", "--env",
                  "MARKER=" + marker, "--", "bash", "-c",
                  "trap '' TERM; yes '{\"samples_per_sec\": 5, \"data_wait\": 0.25}' "
                  ">> \"$NODUS_METRICS\"",
                  marker},
                 marker);
  expect_held(f);
  const auto& stats = f.job["stats"];
  EXPECT_DOUBLE_EQ(stats.value("throughput", 0.0), 5);
  EXPECT_DOUBLE_EQ(stats.value("data_wait_share", 0.0), 0.25);
  EXPECT_NE(stats.value("metrics_note", "").find("skipped unread"), std::string::npos);
}

TEST(InputFlood, SweepBudgetHoldsUnderAnOutputFlood) {
  NodusHome home;
  std::string marker = unique_marker();
  PeakRss rss(home.path());
  double t0 = now_seconds();
  auto r = home.run({"sweep",
                     "--gpu",
                     "H100:2",
                     "--budget",
                     "0.01",
                     "--grace",
                     "1s",
                     "--metric-regex",
                     "x=y ([0-9]+)",
                     "--param",
                     "i=1",
                     "--env",
                     "MARKER=" + marker,
                     "--format",
                     "json",
                     "--",
                     "bash",
                     "-c",
                     "trap '' TERM; yes 'y 123' | cat; echo {i}",
                     marker},
                    {{"NODUS_LOCAL_GPUS", "H100:2"}});
  double wall = now_seconds() - t0;
  long peak = rss.stop();
  EXPECT_EQ(r.code, 122) << r.err;
  EXPECT_EQ(survivors(marker), 0u);
  auto sweeps = nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out);
  ASSERT_EQ(sweeps.size(), 1u);
  // Within the budget, or past it by what the kill may take (its cell's note then says so).
  EXPECT_LE(sweeps[0]["cost_usd"].get<double>(), 0.01 + 0.01 / seconds_for(0.01, 2) * 0.5);
  EXPECT_TRUE(billed_within_cap(show_json(home, "1"), 0.01, 0.01 / seconds_for(0.01, 2)));
  EXPECT_LE(wall, seconds_for(0.01, 2) + kLateBound + 2);  // + the sweep's own start and end
  EXPECT_LT(peak, kRssBoundKiB);
  EXPECT_LT(store_bytes(home), kStoreBound);
  std::printf("[ measured ] sweep wall %.2f s, cost $%.5f, peak VmHWM %ld KiB\n", wall,
              sweeps[0]["cost_usd"].get<double>(), peak);
}

}  // namespace
}  // namespace nodus::testing
