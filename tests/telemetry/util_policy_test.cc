#include "telemetry/util_policy.h"

#include <gtest/gtest.h>

namespace nodus::telemetry {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

std::vector<GpuSample> at(double t, std::vector<double> utils) {
  std::vector<GpuSample> out;
  for (size_t i = 0; i < utils.size(); ++i) {
    GpuSample s;
    s.t = t;
    s.gpu_index = static_cast<int>(i);
    s.util_gpu = utils[i];
    out.push_back(s);
  }
  return out;
}

TEST(UtilPolicy, StopsOnceAFullIdleWindowHasPassed) {
  UtilPolicy p(20, minutes(5), 1000);
  for (int i = 1; i <= 300; ++i) {
    p.add(at(1000 + i, {3.2}));
    auto stop = p.check(1000 + i);
    if (i < 300) {
      ASSERT_FALSE(stop) << i;  // the window is not full yet
    } else {
      ASSERT_TRUE(stop);
      EXPECT_EQ(*stop, "mean GPU utilization 3.2% over the last 5m00s < 20%");
    }
  }
}

TEST(UtilPolicy, BusyEnoughKeepsRunning) {
  UtilPolicy p(20, seconds(60), 0);
  for (int i = 1; i <= 120; ++i) p.add(at(i, {i % 2 ? 0.0 : 40.0}));  // mean 20: not < 20
  EXPECT_FALSE(p.check(120));
}

TEST(UtilPolicy, OnlyTheLastWindowCounts) {
  UtilPolicy p(20, seconds(60), 0);
  for (int i = 1; i <= 60; ++i) p.add(at(i, {95}));
  for (int i = 61; i <= 120; ++i) p.add(at(i, {1}));
  EXPECT_FALSE(p.check(90));  // half busy, half idle: mean 48
  auto stop = p.check(120);
  ASSERT_TRUE(stop);
  EXPECT_EQ(*stop, "mean GPU utilization 1% over the last 1m00s < 20%");
}

TEST(UtilPolicy, AveragesAcrossGpusPerRound) {
  UtilPolicy p(30, seconds(10), 0);
  for (int i = 1; i <= 10; ++i) p.add(at(i, {0, 50}));  // one idle GPU of two: 25%
  EXPECT_NEAR(*p.window_mean(10), 25, 1e-12);
  EXPECT_TRUE(p.check(10));
}

TEST(UtilPolicy, NoSamplesIsNotIdleness) {
  UtilPolicy p(20, seconds(10), 0);
  EXPECT_FALSE(p.check(100));
  p.add(at(5, {0}));
  EXPECT_FALSE(p.check(100));  // the only sample is older than the window
  EXPECT_FALSE(p.window_mean(100));
}

}  // namespace
}  // namespace nodus::telemetry
