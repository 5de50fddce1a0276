#include "telemetry/summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "series_fixture.h"

namespace nodus::telemetry {
namespace {

GpuSample g(double t, int gpu, double util) {
  GpuSample s;
  s.t = t;
  s.gpu_index = gpu;
  s.util_gpu = util;
  return s;
}

HostSample h(double cpu, int cores, double peak) {
  HostSample s;
  s.cpu_percent = cpu;
  s.cores = cores;
  s.max_process_cpu_percent = peak;
  return s;
}

TEST(Summarize, UtilizationFiguresFromTheRoundSeries) {
  SummaryInput in;
  // Two GPUs; round means 0, 100, 0, 100, 40: mean 48, median 40.
  for (int i = 0; i < 4; ++i) {
    in.gpu.push_back(g(i, 0, i % 2 ? 100 : 0));
    in.gpu.push_back(g(i, 1, i % 2 ? 100 : 0));
  }
  in.gpu.push_back(g(4, 0, 30));
  in.gpu.push_back(g(4, 1, 50));
  in.cost = 10;
  in.wall_s = 5;
  Summary s = summarize(in);
  EXPECT_EQ(s.n_samples, 5);
  EXPECT_EQ(s.n_gpus, 2);
  EXPECT_DOUBLE_EQ(*s.util_mean, 48);
  EXPECT_DOUBLE_EQ(*s.util_median, 40);
  EXPECT_DOUBLE_EQ(*s.idle_fraction, 0.4);
  // Steps: 0->100, 100->0, 0->100 jump; 100->40 does not: 3 of 4.
  EXPECT_DOUBLE_EQ(*s.sawtooth, 0.75);
  EXPECT_DOUBLE_EQ(*s.idle_usd, 10 * (1 - 0.48));
  EXPECT_EQ(s.cost, 10);
  EXPECT_EQ(s.wall_s, 5);
}

TEST(Summarize, SteadySeriesHasNoSawtooth) {
  SummaryInput in;
  for (int i = 0; i < 20; ++i) in.gpu.push_back(g(i, 0, 40 + (i % 3)));
  Summary s = summarize(in);
  EXPECT_DOUBLE_EQ(*s.sawtooth, 0);
  EXPECT_DOUBLE_EQ(*s.idle_fraction, 0);
  EXPECT_LT(*s.util_stddev, 1);
}

TEST(Summarize, IdleThresholdIsStrict) {
  SummaryInput in;
  in.gpu = {g(0, 0, kIdleUtil - 0.1), g(1, 0, kIdleUtil)};
  EXPECT_DOUBLE_EQ(*summarize(in).idle_fraction, 0.5);
}

TEST(Summarize, NoInputsNoFigures) {
  SummaryInput in;
  in.cost = 3;
  Summary s = summarize(in);
  EXPECT_FALSE(s.util_mean);
  EXPECT_FALSE(s.util_median);
  EXPECT_FALSE(s.idle_fraction);
  EXPECT_FALSE(s.sawtooth);
  EXPECT_FALSE(s.idle_usd);
  EXPECT_FALSE(s.cpu_saturation);
  EXPECT_FALSE(s.max_process_cpu);
  EXPECT_FALSE(s.data_wait_share);
  EXPECT_EQ(s.n_samples, 0);
  EXPECT_EQ(s.cost, 3);
}

TEST(Summarize, OneRoundHasNoSawtooth) {
  SummaryInput in;
  in.gpu = {g(0, 0, 90)};
  Summary s = summarize(in);
  EXPECT_DOUBLE_EQ(*s.util_mean, 90);
  EXPECT_FALSE(s.sawtooth);
}

TEST(Summarize, CpuSaturationPerSampleCores) {
  SummaryInput in;
  in.host = {h(1600, 16, 100), h(400, 16, 100), h(100, 4, 250)};
  Summary s = summarize(in);
  EXPECT_DOUBLE_EQ(*s.cpu_saturation, (1.0 + 0.25 + 0.25) / 3);
  EXPECT_DOUBLE_EQ(*s.cpu_percent_mean, 700);
  EXPECT_EQ(*s.cores, 16);
  EXPECT_DOUBLE_EQ(*s.max_process_cpu, 250);
  EXPECT_EQ(s.n_host_samples, 3);
}

TEST(Summarize, DataWaitSkipsTheFirstReport) {
  SummaryInput in;
  in.metrics = {{3, "data_wait", 0.70},
                {1, "data_wait", 0.95},
                {2, "samples_per_sec", 900},
                {4, "data_wait", 0.74}};
  Summary s = summarize(in);
  EXPECT_NEAR(*s.data_wait_share, 0.72, 1e-12);
  EXPECT_EQ(s.n_data_wait, 3);
  in.metrics = {{1, "data_wait", 0.3}};
  EXPECT_DOUBLE_EQ(*summarize(in).data_wait_share, 0.3);  // the only report is all there is
}

TEST(Summarize, LoaderStarvedFixture) {
  Summary s = summarize(testing::load_series("loader_starved.csv"));
  EXPECT_EQ(s.n_samples, 60);
  EXPECT_NEAR(*s.util_mean, 0.4 * 90 + 0.6 * 2, 3);
  EXPECT_GT(*s.sawtooth, 0.35);
  EXPECT_NEAR(*s.data_wait_share, 0.83, 0.02);
  EXPECT_NEAR(*s.cpu_saturation, 500.0 / 1600, 0.02);
}

TEST(SummaryJson, RoundTripsPresentFieldsOnly) {
  Summary s = summarize(testing::load_series("busy.csv"));
  s.cost = 12.5;
  nlohmann::json j = s;
  EXPECT_TRUE(j.contains("util_mean"));
  EXPECT_TRUE(j.contains("data_wait_share"));
  Summary back = j.get<Summary>();
  EXPECT_EQ(back.util_mean, s.util_mean);
  EXPECT_EQ(back.util_median, s.util_median);
  EXPECT_EQ(back.sawtooth, s.sawtooth);
  EXPECT_EQ(back.cpu_saturation, s.cpu_saturation);
  EXPECT_EQ(back.cores, s.cores);
  EXPECT_EQ(back.data_wait_share, s.data_wait_share);
  EXPECT_EQ(back.idle_usd, s.idle_usd);
  EXPECT_EQ(back.n_samples, s.n_samples);
  EXPECT_EQ(back.n_gpus, 2);
  EXPECT_EQ(back.cost, 12.5);

  nlohmann::json empty = summarize({});
  EXPECT_FALSE(empty.contains("util_mean"));
  EXPECT_FALSE(empty.contains("idle_usd"));
  EXPECT_FALSE(empty.get<Summary>().util_mean);
}

TEST(SummaryJson, IgnoresOtherStatsKeys) {
  nlohmann::json j = {{"util_mean", 42.0}, {"throughput", 900}, {"cores", "many"}};
  Summary s = j.get<Summary>();
  EXPECT_EQ(s.util_mean, 42.0);
  EXPECT_FALSE(s.cores);
}

}  // namespace
}  // namespace nodus::telemetry
