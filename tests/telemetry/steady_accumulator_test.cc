// SteadyAccumulator (the streamed end-of-job summary) against steady_summary() and summarize()
// on the recorded series: the same figures, the median to the histogram's 0.1% bins.

#include "telemetry/steady_accumulator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "series_fixture.h"
#include "telemetry/phases.h"

namespace nodus::telemetry {
namespace {

void expect_same(const Summary& got, const Summary& want) {
  EXPECT_EQ(got.n_samples, want.n_samples);
  EXPECT_EQ(got.n_gpus, want.n_gpus);
  ASSERT_EQ(got.util_mean.has_value(), want.util_mean.has_value());
  if (want.util_mean) {
    EXPECT_NEAR(*got.util_mean, *want.util_mean, 1e-9);
    EXPECT_NEAR(*got.util_median, *want.util_median, 0.05);  // 0.1% bins
    EXPECT_NEAR(*got.util_stddev, *want.util_stddev, 1e-6);
    EXPECT_NEAR(*got.idle_fraction, *want.idle_fraction, 1e-12);
    ASSERT_EQ(got.sawtooth.has_value(), want.sawtooth.has_value());
    if (want.sawtooth) {
      EXPECT_NEAR(*got.sawtooth, *want.sawtooth, 1e-12);
    }
  }
  EXPECT_EQ(got.n_host_samples, want.n_host_samples);
  ASSERT_EQ(got.cpu_percent_mean.has_value(), want.cpu_percent_mean.has_value());
  if (want.cpu_percent_mean) {
    EXPECT_NEAR(*got.cpu_percent_mean, *want.cpu_percent_mean, 1e-9);
    EXPECT_NEAR(*got.cpu_saturation, *want.cpu_saturation, 1e-12);
    EXPECT_EQ(got.cores, want.cores);
    EXPECT_EQ(got.max_process_cpu, want.max_process_cpu);
  }
  EXPECT_EQ(got.n_data_wait, want.n_data_wait);
  ASSERT_EQ(got.data_wait_share.has_value(), want.data_wait_share.has_value());
  if (want.data_wait_share) {
    EXPECT_NEAR(*got.data_wait_share, *want.data_wait_share, 1e-12);
  }
  EXPECT_EQ(got.cost, want.cost);
  EXPECT_EQ(got.wall_s, want.wall_s);
  ASSERT_EQ(got.idle_usd.has_value(), want.idle_usd.has_value());
  if (want.idle_usd) {
    EXPECT_NEAR(*got.idle_usd, *want.idle_usd, 1e-9);
  }
}

template <typename T>
std::vector<T> by_time(std::vector<T> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const T& a, const T& b) { return a.t < b.t; });
  return rows;
}

// Streams the series row by row, in time order as the store visits them, and compares with the
// in-memory functions on the whole series.
void expect_streamed_same(const std::string& fixture, std::optional<double> steady_t) {
  SummaryInput in = testing::load_series(fixture);
  SteadyAccumulator acc(steady_t);
  for (const auto& g : by_time(in.gpu)) acc.add_gpu(g);
  for (const auto& h : by_time(in.host)) acc.add_host(h);
  for (const auto& m : by_time(in.metrics)) acc.add_metric(m);
  auto got = acc.finish(in.cost, in.wall_s);
  Phases phases;
  phases.steady_t = steady_t;
  SCOPED_TRACE(fixture + " steady_t " + (steady_t ? std::to_string(*steady_t) : "none"));
  {
    SCOPED_TRACE("steady");
    expect_same(got.steady, steady_summary(in, phases));
  }
  {
    SCOPED_TRACE("whole");
    expect_same(got.whole, summarize(in));
  }
}

TEST(SteadyAccumulator, MatchesSteadySummaryOnRecordedSeries) {
  for (const char* f :
       {"busy.csv", "loader_starved.csv", "sawtooth_no_wait.csv", "sync_bound.csv", "cpu_bound.csv",
        "no_gpu.csv", "h200_busy.csv", "h200_workers0.csv", "io_bound.csv", "launch_bound.csv"}) {
    SummaryInput in = testing::load_series(f);
    double first = 1e300, last = -1e300;
    for (const auto& g : in.gpu) first = std::min(first, g.t), last = std::max(last, g.t);
    for (const auto& h : in.host) first = std::min(first, h.t), last = std::max(last, h.t);
    ASSERT_LT(first, last) << f;
    expect_streamed_same(f, std::nullopt);
    expect_streamed_same(f, first + (last - first) / 3);  // a real slice
    expect_streamed_same(f, last + 1);                    // an empty slice: whole-job figures
  }
}

TEST(SteadyAccumulator, SliceStartsAtSteadyTAndMoneyStaysWholeJob) {
  SteadyAccumulator acc(10);
  for (int t = 0; t < 20; ++t) {
    GpuSample s;
    s.t = t;
    s.util_gpu = t < 10 ? 0.0 : 90.0;
    acc.add_gpu(s);
  }
  auto r = acc.finish(10, 20);
  EXPECT_DOUBLE_EQ(*r.steady.util_mean, 90);
  EXPECT_EQ(r.steady.n_samples, 10);
  EXPECT_DOUBLE_EQ(*r.whole.util_mean, 45);
  EXPECT_DOUBLE_EQ(*r.steady.idle_usd, 10 * (1 - 0.45));
}

}  // namespace
}  // namespace nodus::telemetry
