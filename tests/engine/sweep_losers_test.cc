// --stop-early's decision on recorded reports: steady state only, enough reports, the factor.

#include "engine/sweep_losers.h"

#include <gtest/gtest.h>

namespace nodus::engine {
namespace {

std::vector<MetricPoint> reports(std::vector<std::pair<double, double>> tv) {
  std::vector<MetricPoint> out;
  for (auto [t, v] : tv) out.push_back({t, "samples_per_sec", v});
  out.push_back({1, "loss", 9});  // other metrics are ignored
  return out;
}

TEST(SweepLosers, SteadyThroughputSkipsTheWarmUpAndWaitsForEnoughReports) {
  // First report at t=100; 5 s of warm-up: the 10/s reports before 105 do not count.
  auto p = reports({{100, 10}, {102, 10}, {105, 100}, {106, 110}});
  EXPECT_FALSE(steady_throughput(p, "samples_per_sec", 5).has_value());  // 2 steady reports
  p.push_back({107, "samples_per_sec", 90});
  EXPECT_DOUBLE_EQ(*steady_throughput(p, "samples_per_sec", 5), 100);
  EXPECT_FALSE(steady_throughput(p, "tokens_per_sec", 5).has_value());
  EXPECT_FALSE(steady_throughput(reports({{1, 0}, {2, 0}, {3, 0}}), "samples_per_sec", 0));
}

TEST(SweepLosers, OnlyCellsClearlyWorseThanTheFactorAreStopped) {
  double best = per_sample(1.0, 100);                                     // $0.01 a sample
  EXPECT_FALSE(judge_running_cell(per_sample(1.0, 60), best, 2, "w=4"));  // 1.7x: kept
  auto v = judge_running_cell(per_sample(1.0, 40), best, 2, "w=4");       // 2.5x: stopped
  ASSERT_TRUE(v.has_value());
  EXPECT_DOUBLE_EQ(v->ratio, 2.5);
  EXPECT_EQ(v->note.rfind("stopped early: its steady cost per sample was 2.5x the best finished "
                          "cell's (w=4)",
                          0),
            0u)
      << v->note;
  // CPU-only cells have no rate: time per sample is compared.
  EXPECT_TRUE(judge_running_cell(per_sample(0, 10), per_sample(0, 100), 3, "w=1"));
  EXPECT_FALSE(judge_running_cell(per_sample(0, 50), per_sample(0, 100), 3, "w=1"));
}

}  // namespace
}  // namespace nodus::engine
