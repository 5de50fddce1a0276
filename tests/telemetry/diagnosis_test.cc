#include "telemetry/diagnosis.h"

#include <gtest/gtest.h>

#include "series_fixture.h"

namespace nodus::telemetry {
namespace {

std::vector<Finding> diagnose_fixture(const std::string& name) {
  return diagnose(summarize(testing::load_series(name)));
}

std::string top_rule(const Summary& s) {
  auto f = diagnose(s);
  return f.empty() ? "" : f.front().rule;
}

// A summary with the figures the rules read; the rest empty.
Summary summary(std::optional<double> util, std::optional<double> data_wait,
                std::optional<double> stddev = 30, std::optional<double> sawtooth = 0) {
  Summary s;
  s.util_mean = util;
  s.data_wait_share = data_wait;
  if (util) {
    s.util_stddev = stddev;
    s.sawtooth = sawtooth;
  }
  return s;
}

Summary with_host(Summary s, double saturation, double busiest, int cores = 16) {
  s.cpu_saturation = saturation;
  s.cores = cores;
  s.max_process_cpu = busiest;
  return s;
}

// --- recorded-shape fixtures (tests/data/telemetry/make_synthetic.py) ---

TEST(DiagnoseFixture, LoaderStarved) {
  auto f = diagnose_fixture("loader_starved.csv");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "loader-starved");
  EXPECT_EQ(f[0].verdict, "loader-starved");
  EXPECT_NE(f[0].evidence.find("data wait 83"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("sawtooth"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].fix.find("num_workers (try 4, 8, 16)"), std::string::npos);
  EXPECT_EQ(verdict(summarize(testing::load_series("loader_starved.csv"))), "loader-starved");
}

TEST(DiagnoseFixture, CpuBound) {
  auto f = diagnose_fixture("cpu_bound.csv");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "cpu-bound");
  EXPECT_NE(f[0].evidence.find("of 16 cores"), std::string::npos) << f[0].evidence;
}

TEST(DiagnoseFixture, IoBoundOnlyWithIoEvidence) {
  Summary s = summarize(testing::load_series("io_bound.csv"));
  Evidence reads;
  reads.read_mib_per_s = 180;
  auto f = diagnose(s, reads);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "io-bound");
  EXPECT_NE(f[0].fix.find("local disk"), std::string::npos);
  EXPECT_NE(f[0].evidence.find("storage reads 180.0 MiB/s"), std::string::npos) << f[0].evidence;
  EXPECT_EQ(f[0].signals, (std::vector<std::string>{"data_wait", "io"}));
  // The same idle CPU without reads (a loader sleeping on a network or a lock) is not storage.
  Evidence none;
  none.read_mib_per_s = 0;
  none.iowait_share = 0.01;
  auto g = diagnose(s, none);
  ASSERT_FALSE(g.empty());
  EXPECT_EQ(g[0].rule, "loader-starved");
  EXPECT_NE(g[0].evidence.find("storage reads 0.0 MiB/s"), std::string::npos) << g[0].evidence;
  EXPECT_EQ(diagnose(s)[0].rule, "loader-starved");  // unknown I/O: not guessed
}

TEST(DiagnoseFixture, SyncBound) {
  auto f = diagnose_fixture("sync_bound.csv");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "sync-bound");
  EXPECT_EQ(f[0].verdict, "gpu-idle-in-step");
  EXPECT_NE(f[0].evidence.find("(near 0)"), std::string::npos) << f[0].evidence;
}

TEST(DiagnoseFixture, LaunchBoundThenSyncAsTheAlternative) {
  auto f = diagnose_fixture("launch_bound.csv");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].rule, "launch-bound");
  EXPECT_NE(f[0].fix.find("torch.compile"), std::string::npos);
  EXPECT_EQ(f[1].rule, "sync-bound");
  EXPECT_GT(f[0].score, f[1].score);
}

TEST(DiagnoseFixture, BusyIsANoteOnly) {
  auto f = diagnose_fixture("busy.csv");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "busy");
  EXPECT_TRUE(f[0].note);
  EXPECT_NE(f[0].fix.find("bf16"), std::string::npos);
  EXPECT_EQ(verdict(summarize(testing::load_series("busy.csv"))), "ok");
}

TEST(DiagnoseFixture, SawtoothWithoutDataWaitSaysItIsUnknown) {
  auto f = diagnose_fixture("sawtooth_no_wait.csv");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "data-wait-unknown");
  EXPECT_EQ(f[0].verdict, "low-util");
  EXPECT_NE(f[0].evidence.find("data wait not measured"), std::string::npos);
  EXPECT_EQ(f[0].fix.find("num_workers"), std::string::npos) << f[0].fix;
  EXPECT_EQ(f[0].signals, (std::vector<std::string>{"gpu_util"}));
}

TEST(DiagnoseFixture, NoGpuData) {
  Summary s = summarize(testing::load_series("no_gpu.csv"));
  EXPECT_TRUE(diagnose(s).empty());
  EXPECT_EQ(verdict(s), "no-gpu-data");
}

// --- borderline values ---

TEST(DiagnoseBorder, DataWaitAboveTenPercentOnly) {
  EXPECT_EQ(top_rule(summary(70, 0.10)), "");
  EXPECT_EQ(verdict(summary(70, 0.10)), "ok");
  EXPECT_EQ(top_rule(summary(70, 0.1001)), "loader-starved");
}

TEST(DiagnoseBorder, LowUtilBelowSixty) {
  EXPECT_EQ(top_rule(summary(59.9, 0.01)), "sync-bound");
  EXPECT_EQ(top_rule(summary(60, 0.01)), "");
}

TEST(DiagnoseBorder, LaunchBoundIsThirtyToFiftySteady) {
  EXPECT_EQ(top_rule(summary(30, 0.01, 5)), "launch-bound");
  EXPECT_EQ(top_rule(summary(50, 0.01, 5)), "launch-bound");
  EXPECT_EQ(top_rule(summary(29.9, 0.01, 5)), "sync-bound");
  EXPECT_EQ(top_rule(summary(50.1, 0.01, 5)), "sync-bound");
  EXPECT_EQ(top_rule(summary(40, 0.01, 15)), "launch-bound");
  EXPECT_EQ(top_rule(summary(40, 0.01, 15.1)), "sync-bound");
}

TEST(DiagnoseBorder, BusyFromEighty) {
  auto f = diagnose(summary(80, 0.01));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "busy");
  EXPECT_TRUE(diagnose(summary(79.9, 0.01)).empty());
}

TEST(DiagnoseBorder, CpuSaturatedFromEightyFivePercent) {
  EXPECT_EQ(top_rule(with_host(summary(40, 0.3), 0.85, 100)), "cpu-bound");
  EXPECT_EQ(top_rule(with_host(summary(40, 0.3), 0.849, 100)), "loader-starved");
}

TEST(DiagnoseBorder, IoBoundNeedsAMiBPerSecondOrTenPercentIowait) {
  Evidence e;
  e.read_mib_per_s = 1.0;
  EXPECT_EQ(diagnose(with_host(summary(40, 0.3), 0.5, 50), e)[0].rule, "io-bound");
  e.read_mib_per_s = 0.99;
  EXPECT_EQ(diagnose(with_host(summary(40, 0.3), 0.5, 50), e)[0].rule, "loader-starved");
  e.iowait_share = 0.10;
  EXPECT_EQ(diagnose(with_host(summary(40, 0.3), 0.5, 50), e)[0].rule, "io-bound");
  e.iowait_share = 0.099;
  EXPECT_EQ(diagnose(with_host(summary(40, 0.3), 0.5, 50), e)[0].rule, "loader-starved");
  // Saturated cores explain late batches before the disk does.
  e.read_mib_per_s = 500;
  EXPECT_EQ(diagnose(with_host(summary(40, 0.3), 0.9, 100), e)[0].rule, "cpu-bound");
}

TEST(DiagnoseBorder, LowUtilWithoutDataWaitIsNeverTheLoader) {
  for (double saw : {0.0, 0.25, 0.9}) {
    auto f = diagnose(summary(40, std::nullopt, 40, saw));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].rule, "data-wait-unknown");
  }
  // A job that does not touch its GPU (`sleep 20` under a stand-in nvidia-smi).
  EXPECT_EQ(top_rule(summary(0, std::nullopt, 0, 0)), "data-wait-unknown");
}

TEST(DiagnoseBorder, MeasuredDataWaitDecidesNotTheSawtooth) {
  EXPECT_EQ(top_rule(summary(40, 0.049, 40, 0.5)), "sync-bound");
  EXPECT_EQ(top_rule(summary(40, 0.10, 40, 0.5)), "sync-bound");
  EXPECT_EQ(top_rule(summary(40, 0.1001, 40, 0.5)), "loader-starved");
}

TEST(DiagnoseBorder, LoaderWaitWithoutGpuData) {
  auto f = diagnose(summary(std::nullopt, 0.5));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "loader-starved");
  EXPECT_NE(f[0].evidence.find("no GPU data"), std::string::npos);
}

TEST(DiagnoseBorder, LaunchBoundNeedsAMeasuredDataWait) {
  EXPECT_EQ(top_rule(summary(40, 0.01, 5)), "launch-bound");
  EXPECT_EQ(top_rule(summary(40, std::nullopt, 5)), "data-wait-unknown");
}

TEST(DiagnoseEmpty, NothingKnownNothingFound) {
  EXPECT_TRUE(diagnose(Summary{}).empty());
  EXPECT_EQ(verdict(Summary{}), "no-gpu-data");
}

TEST(FormatFinding, EvidenceCauseAndFixOnOneLine) {
  auto f = diagnose(summary(31, 0.72));
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(format_finding(f[0]),
            "data wait 72% > 10%, GPU util 31%: loader starved (loading in the main process, or "
            "too few workers) -> raise num_workers (try 4, 8, 16), pin_memory=True, "
            "persistent_workers=True, prefetch_factor");
}

}  // namespace
}  // namespace nodus::telemetry
