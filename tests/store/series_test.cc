// Metric and telemetry series, and per-job stats.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "store/job_stats.h"
#include "store/series_reader.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;

TEST(StoreSeries, MetricsComeBackInTimeOrder) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t job = store->insert_job(testing::plain_job(JobState::kRunning));
  int64_t other = store->insert_job(testing::plain_job(JobState::kRunning));
  store->add_metrics(job, {{10.5, "samples_per_sec", 1038}, {10.5, "data_wait", 0.95}});
  store->add_metrics(other, {{11, "samples_per_sec", 1}});
  store->add_metrics(job, {{9.0, "samples_per_sec", 900}});
  store->add_metrics(job, {});
  auto points = store->metrics(job);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].t, 9.0);
  EXPECT_EQ(points[1].name, "samples_per_sec");
  EXPECT_EQ(points[1].value, 1038);
  EXPECT_EQ(points[2].name, "data_wait");
  EXPECT_EQ(points[2].value, 0.95);
  EXPECT_EQ(store->metrics(other).size(), 1u);
}

// A job with any one kind of series has series; one with none (or only another job's) has none.
TEST(StoreSeries, HasSeriesSeesEachKindAndOnlyItsJobs) {
  TempDir dir;
  auto store = Store::open(dir.db());
  auto job = [&] { return store->insert_job(testing::plain_job(JobState::kRunning)); };
  const int64_t empty = job(), gpu = job(), host = job(), metric = job();
  GpuSample g;
  g.t = 1;
  store->add_gpu_samples(gpu, {g});
  store->add_host_samples(host, {{1.0, 10, 2, 1, 5, 10}});
  store->add_metrics(metric, {{1, "loss", 0.5}});
  EXPECT_FALSE(store->has_series(empty));
  EXPECT_TRUE(store->has_series(gpu));
  EXPECT_TRUE(store->has_series(host));
  EXPECT_TRUE(store->has_series(metric));
  EXPECT_FALSE(store->has_series(metric + 100));
}

// The end-of-job summary reads the series through SeriesReader: the same rows as the vector
// reads, in the same order, one at a time.
TEST(StoreSeries, VisitsGiveTheSameRowsInOrderOneAtATime) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t job = store->insert_job(testing::plain_job(JobState::kRunning));
  int64_t other = store->insert_job(testing::plain_job(JobState::kRunning));
  std::vector<GpuSample> gpu;
  std::vector<HostSample> host;
  std::vector<MetricPoint> metrics;
  for (int i = 0; i < 5000; ++i) {
    double t = (i * 7919) % 5000;  // out of order
    GpuSample g;
    g.t = t;
    g.gpu_index = i % 8;
    g.util_gpu = i % 101;
    if (i % 3) g.power_w = i;
    gpu.push_back(g);
    HostSample h;
    h.t = t;
    h.cpu_percent = i;
    h.cores = 4;
    host.push_back(h);
    metrics.push_back({t, i % 2 ? "samples_per_sec" : "data_wait", double(i)});
  }
  store->add_gpu_samples(job, gpu);
  store->add_host_samples(job, host);
  store->add_metrics(job, metrics);
  GpuSample elsewhere;
  elsewhere.t = 1;
  elsewhere.util_gpu = 50;
  store->add_gpu_samples(other, {elsewhere});
  store->add_metrics(other, {{0.5, "step_time", 1}});

  SeriesReader reader(*store, job), other_reader(*store, other);
  auto want_gpu = store->gpu_samples(job);
  size_t n = 0;
  double last_t = -1;
  reader.gpu_samples([&](const GpuSample& s) {
    ASSERT_LT(n, want_gpu.size());
    EXPECT_EQ(s.t, want_gpu[n].t);
    EXPECT_GE(s.t, last_t);
    EXPECT_EQ(s.gpu_index, want_gpu[n].gpu_index);
    EXPECT_EQ(s.util_gpu, want_gpu[n].util_gpu);
    EXPECT_EQ(s.power_w, want_gpu[n].power_w);
    last_t = s.t;
    ++n;
  });
  EXPECT_EQ(n, 5000u);
  auto want_host = store->host_samples(job);
  n = 0;
  reader.host_samples([&](const HostSample& h) {
    ASSERT_LT(n, want_host.size());
    EXPECT_EQ(h.t, want_host[n].t);
    EXPECT_EQ(h.cpu_percent, want_host[n].cpu_percent);
    ++n;
  });
  EXPECT_EQ(n, 5000u);
  auto want_metrics = store->metrics(job);
  n = 0;
  reader.metrics([&](const MetricPoint& p) {
    ASSERT_LT(n, want_metrics.size());
    EXPECT_EQ(p.t, want_metrics[n].t);
    EXPECT_EQ(p.name, want_metrics[n].name);
    EXPECT_EQ(p.value, want_metrics[n].value);
    ++n;
  });
  EXPECT_EQ(n, 5000u);

  // The first report of any of the names: min(t), this job's only.
  EXPECT_EQ(reader.first_metric_t({"samples_per_sec"}), 1.0);  // i = 2679
  EXPECT_EQ(reader.first_metric_t({"data_wait", "step_time"}), 0.0);
  EXPECT_EQ(other_reader.first_metric_t({"step_time"}), 0.5);
  EXPECT_FALSE(reader.first_metric_t({"step_time"}));
  EXPECT_FALSE(reader.first_metric_t({}));
}

TEST(StoreSeries, GpuSamplesKeepMissingFieldsEmpty) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t job = store->insert_job(testing::plain_job(JobState::kRunning));
  GpuSample full{100.25, 3, 27, 7, 883, 192.65, 1965, 1200, 300};
  GpuSample sparse;
  sparse.t = 100.5;
  sparse.gpu_index = 1;
  sparse.util_gpu = 0;
  store->add_gpu_samples(job, {sparse, full});
  auto back = store->gpu_samples(job);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].t, 100.25);
  EXPECT_EQ(back[0].gpu_index, 3);
  EXPECT_EQ(back[0].util_gpu, 27);
  EXPECT_EQ(back[0].util_mem, 7);
  EXPECT_EQ(back[0].mem_used_mib, 883);
  EXPECT_EQ(back[0].power_w, 192.65);
  EXPECT_EQ(back[0].sm_clock_mhz, 1965);
  EXPECT_EQ(back[0].pcie_rx_kbs, 1200);
  EXPECT_EQ(back[0].pcie_tx_kbs, 300);
  EXPECT_EQ(back[1].gpu_index, 1);
  EXPECT_FALSE(back[1].util_mem);
  EXPECT_FALSE(back[1].mem_used_mib);
  EXPECT_FALSE(back[1].power_w);
  EXPECT_FALSE(back[1].sm_clock_mhz);
  EXPECT_FALSE(back[1].pcie_rx_kbs);
  EXPECT_FALSE(back[1].pcie_tx_kbs);
}

TEST(StoreSeries, HostSamplesRoundTrip) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t job = store->insert_job(testing::plain_job(JobState::kRunning));
  store->add_host_samples(job, {{5.0, 412.5, 16, 9, 20480.5, 99.5}, {6.0, 100, 16, 9, 1, 50}});
  auto back = store->host_samples(job);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].t, 5.0);
  EXPECT_EQ(back[0].cpu_percent, 412.5);
  EXPECT_EQ(back[0].cores, 16);
  EXPECT_EQ(back[0].nprocs, 9);
  EXPECT_EQ(back[0].rss_mib, 20480.5);
  EXPECT_EQ(back[0].max_process_cpu_percent, 99.5);
  EXPECT_EQ(back[1].t, 6.0);
}

TEST(StoreSeries, NonFiniteValuesAreDroppedNotFatal) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t job = store->insert_job(testing::plain_job(JobState::kRunning));
  store->add_metrics(job, {{1, "loss", std::nan("")}, {2, "loss", 0.5}, {3, "loss", INFINITY}});
  ASSERT_EQ(store->metrics(job).size(), 1u);
  EXPECT_EQ(store->metrics(job)[0].value, 0.5);
  GpuSample bad;
  bad.util_gpu = std::nan("");
  GpuSample no_power;
  no_power.power_w = std::nan("");  // optional: stored as empty
  store->add_gpu_samples(job, {bad, no_power});
  ASSERT_EQ(store->gpu_samples(job).size(), 1u);
  EXPECT_FALSE(store->gpu_samples(job)[0].power_w);
}

TEST(StoreSeries, LargeBatchIsWrittenQuickly) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t job = store->insert_job(testing::plain_job(JobState::kRunning));
  std::vector<GpuSample> batch(5000);
  for (size_t i = 0; i < batch.size(); ++i) batch[i].t = static_cast<double>(i);
  auto start = std::chrono::steady_clock::now();
  store->add_gpu_samples(job, batch);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("5000 GPU samples in one call: %.1f ms\n", ms);
  EXPECT_EQ(store->gpu_samples(job).size(), 5000u);
  EXPECT_LT(ms, 2000);  // per-row transactions would take seconds
}

TEST(StoreStats, PutMergesKeys) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t job = store->insert_job(testing::plain_job());
  EXPECT_FALSE(store->stats(job));
  store->put_stats({job, {{"util_mean", 41.5}, {"idle_usd", 0.2}}});
  store->put_stats({job, {{"idle_usd", 0.3}, {"throughput", 4953}}});
  auto stats = store->stats(job);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->job_id, job);
  EXPECT_EQ(stats->values["util_mean"], 41.5);
  EXPECT_EQ(stats->values["idle_usd"], 0.3);
  EXPECT_EQ(stats->values["throughput"], 4953);
}

}  // namespace
}  // namespace nodus::store
