// JobObserver::finish on a long stored series: the end-of-job summary streams the rows (each
// table read once, row by row), so the supervisor's peak RSS does not grow with the job's
// length. Reading the series back into vectors (the old way) grows it by >100 MiB here.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/observer.h"
#include "store/job_stats.h"
#include "store/store.h"
#include "temp_dir.h"

namespace nodus::engine {
namespace {

using testing::TempDir;

// The process's peak RSS since the last reset_peak_rss(), KiB (VmHWM of /proc/self/status).
long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// Sets the peak back to the current RSS (Linux >= 4.0: "5" into clear_refs).
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

TEST(ObserverFinish, LongSeriesSummaryIsStreamedNotReadBack) {
#ifdef __SANITIZE_ADDRESS__
  // ASan keeps freed memory in its quarantine, so the peak RSS measures ASan, not the summary.
  GTEST_SKIP() << "peak RSS is not the program's under AddressSanitizer";
#endif
  TempDir dir;
  auto store = store::Store::open(dir.db());
  JobRecord job;
  job.name = "long";
  job.argv = {"true"};
  job.backend = "local";
  job.state = JobState::kCompleted;
  job.gpu_count = 8;
  job.rate_per_gpu_hour = 1;
  const int rounds = 60'000;  // 8 GPUs: 480k samples, ~17 h at 1 Hz
  job.created_at = 0;
  job.started_at = 0;
  job.ended_at = rounds;
  job.cost = 10;
  job.id = store->insert_job(job);
  double sum = 0;
  for (int from = 0; from < rounds; from += 1000) {
    std::vector<GpuSample> batch;
    for (int r = from; r < from + 1000; ++r) {
      double u = (r % 10) * 10;  // 0, 10, ..., 90
      sum += u;
      for (int g = 0; g < 8; ++g) {
        GpuSample s;
        s.t = r;
        s.gpu_index = g;
        s.util_gpu = u;
        s.power_w = 300;
        batch.push_back(s);
      }
    }
    store->add_gpu_samples(job.id, batch);
  }

  JobObserver observer(*store, SuperviseOptions{}, /*attach=*/false);
  ASSERT_TRUE(reset_peak_rss());
  long before = peak_rss_kib();
  ASSERT_GT(before, 0);
  observer.finish(job);
  long grown = peak_rss_kib() - before;
  // 480k samples are ~55 MiB as a vector; SQLite's page cache is 2 MiB by default.
  EXPECT_LT(grown, 16 * 1024) << "finish grew the peak RSS by " << grown << " KiB";

  auto stats = store->stats(job.id);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->values.value("n_samples", 0), rounds);
  EXPECT_EQ(stats->values.value("n_gpus", 0), 8);
  EXPECT_NEAR(stats->values.value("util_mean", -1.0), sum / rounds, 1e-9);
  EXPECT_DOUBLE_EQ(stats->values.value("util_median", -1.0), 45);  // half <= 40, half >= 50
  EXPECT_NEAR(stats->values.value("idle_fraction", -1.0), 0.1, 1e-12);
  EXPECT_NEAR(stats->values.value("idle_usd", -1.0), 10 * (1 - sum / rounds / 100), 1e-9);
}

}  // namespace
}  // namespace nodus::engine
