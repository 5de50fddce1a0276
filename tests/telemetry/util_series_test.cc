#include "telemetry/util_series.h"

#include <gtest/gtest.h>

namespace nodus::telemetry {
namespace {

GpuSample g(double t, int gpu, double util) {
  GpuSample s;
  s.t = t;
  s.gpu_index = gpu;
  s.util_gpu = util;
  return s;
}

TEST(UtilSeries, AveragesEachRoundAcrossGpus) {
  // nvidia-smi prints each GPU a few ms apart; rounds are 1 s apart.
  auto series = util_series({g(10.000, 0, 100), g(10.004, 1, 0), g(11.001, 0, 60), g(11.003, 1, 20),
                             g(12.000, 1, 50), g(12.002, 0, 70)});
  ASSERT_EQ(series.size(), 3u);
  EXPECT_DOUBLE_EQ(series[0].util, 50);
  EXPECT_EQ(series[0].gpus, 2);
  EXPECT_DOUBLE_EQ(series[0].t, 10.0);
  EXPECT_DOUBLE_EQ(series[1].util, 40);
  EXPECT_DOUBLE_EQ(series[2].util, 60);
}

TEST(UtilSeries, AGpuMissingFromARoundDoesNotMergeRounds) {
  auto series = util_series({g(10, 0, 10), g(10, 1, 30), g(11, 1, 80), g(12, 0, 20), g(12, 1, 40)});
  ASSERT_EQ(series.size(), 3u);
  EXPECT_DOUBLE_EQ(series[1].util, 80);
  EXPECT_EQ(series[1].gpus, 1);
  EXPECT_DOUBLE_EQ(series[2].util, 30);
}

TEST(UtilSeries, UnsortedInputIsOrderedByTime) {
  auto series = util_series({g(12, 0, 30), g(10, 0, 10), g(11, 0, 20)});
  ASSERT_EQ(series.size(), 3u);
  EXPECT_DOUBLE_EQ(series[0].util, 10);
  EXPECT_DOUBLE_EQ(series[2].util, 30);
}

TEST(UtilSeries, EmptyIsEmpty) { EXPECT_TRUE(util_series({}).empty()); }

TEST(Sparkline, MapsPercentToEightLevels) {
  EXPECT_EQ(sparkline({0, 12.5, 25, 37.5, 50, 62.5, 75, 100}, 8), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({-5, 150}, 10), "▁█");  // clamped
}

TEST(Sparkline, BucketsToTheWidth) {
  std::vector<double> v;
  for (int i = 0; i < 40; ++i) v.push_back(i < 20 ? 0 : 100);
  EXPECT_EQ(sparkline(v, 4), "▁▁██");
  EXPECT_EQ(sparkline({0, 100, 0, 100}, 2), "▅▅");  // each bucket's mean: 50%
}

TEST(Sparkline, NothingToDraw) {
  EXPECT_EQ(sparkline({}, 10), "");
  EXPECT_EQ(sparkline({50}, 0), "");
  EXPECT_EQ(util_sparkline({}, 10), "");
}

TEST(UtilSparkline, DrawsTheRoundMeans) {
  EXPECT_EQ(util_sparkline({g(1, 0, 100), g(1, 1, 100), g(2, 0, 0), g(2, 1, 0)}, 10), "█▁");
}

}  // namespace
}  // namespace nodus::telemetry
