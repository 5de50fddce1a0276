// Many nodus processes on one store: no SQLITE_BUSY surfaces, and a process killed in the middle
// of its writes leaves a consistent file.

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "store/job_stats.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;

// One "supervisor's" worth of writes: a job row, its updates, series batches, stats.
void write_a_job(Store& store, int n) {
  JobRecord j = testing::full_job("job" + std::to_string(n));
  j.state = JobState::kRunning;
  j.supervisor_pid = ::getpid();
  j.supervisor_start = process_start_time(::getpid());
  j.id = store.insert_job(j);
  std::vector<GpuSample> gpu(20);
  std::vector<MetricPoint> metrics;
  for (int i = 0; i < 20; ++i) {
    gpu[i].t = i;
    gpu[i].util_gpu = i * 5;
    metrics.push_back({static_cast<double>(i), "samples_per_sec", i * 100.0});
  }
  store.add_gpu_samples(j.id, gpu);
  store.add_metrics(j.id, metrics);
  store.add_host_samples(j.id, {{1, 100, 4, 3, 512, 90}});
  store.put_stats({j.id, {{"util_mean", 47.5}}});
  j.state = JobState::kCompleted;
  j.exit_code = 0;
  store.update_job(j);
}

TEST(StoreConcurrency, SixteenWritingProcessesNeverSeeBusy) {
  TempDir dir;
  constexpr int kProcs = 16, kJobs = 20;
  std::vector<pid_t> children;
  // Every process also opens the fresh file itself: creation and migration race too.
  for (int p = 0; p < kProcs; ++p)
    children.push_back(testing::spawn([&, p] {
      auto store = Store::open(dir.db());
      for (int n = 0; n < kJobs; ++n) {
        write_a_job(*store, p * 1000 + n);
        store->reconcile_dead_supervisors();
        store->jobs({});
      }
      return true;
    }));
  for (pid_t c : children) EXPECT_EQ(testing::wait_exit(c), 0) << "a writer failed (see stderr)";

  auto store = Store::open(dir.db());
  auto all = store->jobs(testing::every_job());
  EXPECT_EQ(all.size(), static_cast<size_t>(kProcs * kJobs));
  for (const auto& j : all) {
    EXPECT_EQ(j.state, JobState::kCompleted);
    EXPECT_EQ(store->gpu_samples(j.id).size(), 20u);
  }
  EXPECT_EQ(store->integrity_check(), "ok");
}

TEST(StoreConcurrency, KillNineMidWriteLeavesAConsistentFile) {
  TempDir dir;
  Store::open(dir.db());
  for (int round = 0; round < 3; ++round) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = testing::spawn([&] {
      auto store = Store::open(dir.db());
      for (int n = 0;; ++n) {
        write_a_job(*store, n);
        if (n == 2 && ::write(ready[1], "x", 1) != 1) return false;
      }
    });
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);  // it is writing steadily now
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + 37 * round));
    ::kill(child, SIGKILL);
    EXPECT_EQ(testing::wait_exit(child), 128 + SIGKILL);
    ::close(ready[0]);
    ::close(ready[1]);

    auto store = Store::open(dir.db());
    EXPECT_EQ(store->integrity_check(), "ok");
    // Every job row is whole: an insert either happened with all its columns or not at all.
    for (const auto& j : store->jobs(testing::every_job())) {
      EXPECT_EQ(j.argv, testing::full_job().argv);
      EXPECT_EQ(j.gpu_type, "H100-SXM");
    }
    EXPECT_GE(store->jobs(testing::every_job()).size(), static_cast<size_t>(3 * (round + 1)));
  }
}

}  // namespace
}  // namespace nodus::store
