#include "telemetry/summary_accumulator.h"

#include <gtest/gtest.h>

#include "series_fixture.h"

namespace nodus::telemetry {
namespace {

// Feeds a recorded series tick by tick (a few samples at a time, as the supervisor does) and
// checks the running aggregates give what summarize() gives on the whole series.
void expect_same_as_summarize(const std::string& fixture, size_t per_tick) {
  SummaryInput in = testing::load_series(fixture);
  SummaryAccumulator acc;
  for (size_t i = 0; i < in.gpu.size(); i += per_tick) {
    std::vector<GpuSample> tick(in.gpu.begin() + i,
                                in.gpu.begin() + std::min(in.gpu.size(), i + per_tick));
    acc.add_gpu(tick);
  }
  for (const auto& h : in.host) acc.add_host(h);
  for (const auto& m : in.metrics) acc.add_metric(m);
  Summary want = summarize(in);
  Summary got = acc.finish(in.cost, in.wall_s);
  SCOPED_TRACE(fixture);
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
  if (want.cpu_percent_mean) {
    EXPECT_NEAR(*got.cpu_percent_mean, *want.cpu_percent_mean, 1e-9);
    EXPECT_NEAR(*got.cpu_saturation, *want.cpu_saturation, 1e-12);
    EXPECT_EQ(got.cores, want.cores);
    EXPECT_EQ(got.max_process_cpu, want.max_process_cpu);
  }
  EXPECT_EQ(got.n_data_wait, want.n_data_wait);
  if (want.data_wait_share) {
    EXPECT_NEAR(*got.data_wait_share, *want.data_wait_share, 1e-12);
  }
}

TEST(SummaryAccumulator, MatchesSummarizeOnRecordedSeries) {
  for (const char* f : {"busy.csv", "loader_starved.csv", "sawtooth_no_wait.csv", "sync_bound.csv",
                        "cpu_bound.csv", "no_gpu.csv", "h200_busy.csv", "h200_workers0.csv"}) {
    expect_same_as_summarize(f, 1);
    expect_same_as_summarize(f, 8);
  }
}

// A long 8-GPU series is folded in chunks: what is held stays below two chunks of samples.
TEST(SummaryAccumulator, LongSeriesGivesExactMeanAndBoundedPending) {
  SummaryAccumulator acc;
  const int rounds = 200'000;
  double sum = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<GpuSample> tick;
    double u = (r % 10) * 10;  // 0, 10, ..., 90
    for (int g = 0; g < 8; ++g) {
      GpuSample s;
      s.t = r;
      s.gpu_index = g;
      s.util_gpu = u;
      tick.push_back(s);
    }
    sum += u;
    acc.add_gpu(tick);
  }
  Summary s = acc.finish(10, rounds);
  EXPECT_EQ(s.n_samples, rounds);
  EXPECT_EQ(s.n_gpus, 8);
  EXPECT_NEAR(*s.util_mean, sum / rounds, 1e-9);
  EXPECT_EQ(*s.util_median, 45);  // half the rounds <= 40, half >= 50
  EXPECT_NEAR(*s.idle_fraction, 0.1, 1e-12);
}

TEST(SteadyMean, MeanAfterTheEarliestReport) {
  SteadyMean m;
  EXPECT_FALSE(m.value());
  m.add(2, 900);
  m.add(1, 100);  // earliest, though it arrived second: start-up, left out
  m.add(3, 1100);
  EXPECT_DOUBLE_EQ(*m.value(), 1000);
}

}  // namespace
}  // namespace nodus::telemetry
