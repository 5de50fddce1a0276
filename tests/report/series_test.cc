#include "report/series.h"

#include <gtest/gtest.h>

namespace nodus::report {
namespace {

TEST(NiceScale, RoundsUpToAMultipleOfARoundStep) {
  const AxisScale s = nice_scale(8400);
  EXPECT_DOUBLE_EQ(s.step, 2000);
  EXPECT_DOUBLE_EQ(s.max, 10000);
  EXPECT_EQ(s.ticks, (std::vector<double>{0, 2000, 4000, 6000, 8000, 10000}));
}

TEST(NiceScale, HandlesSmallExactAndDegenerateValues) {
  EXPECT_DOUBLE_EQ(nice_scale(0.31).step, 0.1);
  EXPECT_DOUBLE_EQ(nice_scale(0.31).max, 0.4);
  EXPECT_DOUBLE_EQ(nice_scale(100).max, 100);  // an exact multiple is not rounded past
  EXPECT_DOUBLE_EQ(nice_scale(0).max, 1);
  EXPECT_DOUBLE_EQ(nice_scale(-5).max, 1);
}

std::vector<UtilPoint> ramp(size_t n) {
  std::vector<UtilPoint> points;
  for (size_t i = 0; i < n; ++i) points.push_back({double(i), double(i % 100)});
  return points;
}

TEST(ThinUtilPoints, KeepsEveryPointUpToTheLimit) {
  EXPECT_EQ(thin_util_points(ramp(800), 800).size(), 800u);
}

TEST(ThinUtilPoints, KeepsDipsAndPeaksOfLongSeries) {
  std::vector<UtilPoint> points(10000, UtilPoint{0, 95});
  for (size_t i = 0; i < points.size(); ++i) points[i].t = double(i);
  points[4321].util = 0;  // one idle sample must survive thinning
  const auto thin = thin_util_points(points, 800);
  EXPECT_LE(thin.size(), 800u);
  EXPECT_GE(thin.size(), 400u);
  bool dip = false;
  for (size_t i = 0; i < thin.size(); ++i) {
    dip = dip || (thin[i].t == 4321 && thin[i].util == 0);
    if (i) {
      EXPECT_LT(thin[i - 1].t, thin[i].t);
    }
  }
  EXPECT_TRUE(dip);
}

TEST(RollingMean, AveragesACentredWindowAndKeepsEveryTime) {
  const std::vector<UtilPoint> points = {{0, 0}, {1, 100}, {2, 0}, {3, 100}, {4, 0}, {5, 100}};
  const auto mean = rolling_mean(points, 2);
  ASSERT_EQ(mean.size(), points.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    EXPECT_EQ(mean[i].t, points[i].t);
    EXPECT_DOUBLE_EQ(mean[i].util, 50);
  }
  EXPECT_DOUBLE_EQ(rolling_mean(points, 4)[0].util, 50);  // shorter window at the start
  EXPECT_DOUBLE_EQ(rolling_mean(points, 1)[1].util, 100);
}

TEST(IdleStretches, CoverSamplesBelowThresholdUntilTheNextSample) {
  const std::vector<UtilPoint> points = {{0, 2}, {1, 3}, {2, 90}, {3, 5}, {4, 95}, {5, 1}};
  const auto spans = idle_stretches(points, 7, 10);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0], std::make_pair(0.0, 2.0));
  EXPECT_EQ(spans[1], std::make_pair(3.0, 4.0));
  EXPECT_EQ(spans[2], std::make_pair(5.0, 7.0));  // the last one runs to the end
}

TEST(IdleStretches, NoneWhenAlwaysBusy) {
  EXPECT_TRUE(idle_stretches({{0, 50}, {1, 60}}, 2, 10).empty());
}

TEST(MergeClose, JoinsSpansSeparatedByLessThanTheGap) {
  const auto merged = merge_close({{0, 1}, {1.2, 2}, {5, 6}}, 0.5);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0], std::make_pair(0.0, 2.0));
  EXPECT_EQ(merged[1], std::make_pair(5.0, 6.0));
}

}  // namespace
}  // namespace nodus::report
