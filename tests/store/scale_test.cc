// A store with 100k jobs still answers `nodus ps` and `nodus spend` at interactive speed.

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>

#include "store/job_rows.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// CPU time of this process: on a loaded machine wall time mostly measures the queue for a core.
double cpu_ms() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

TEST(StoreScale, HundredThousandJobsListAndSpendFast) {
  TempDir dir;
  constexpr int kJobs = 100'000;
  const double now = unix_now();
  Store::open(dir.db());
  {
    // Bulk load in one transaction through the store's own row mapping (one insert_job call per
    // row would be 100k transactions and only slow the test down).
    Db db(dir.db(), std::chrono::seconds(10));
    Transaction tx(db, Transaction::Mode::kImmediate);
    const char* types[] = {"H100", "A100", "L4", "H200"};
    for (int i = 0; i < kJobs; ++i) {
      JobRecord j = testing::full_job("job" + std::to_string(i % 5000));
      j.gpu_type = types[i % 4];
      j.created_at = now - (kJobs - i) * 300.0;  // one job every 5 minutes for ~a year
      j.started_at = j.created_at + 5;
      bool active = i >= kJobs - 20;
      j.state = active ? JobState::kRunning : (i % 7 ? JobState::kCompleted : JobState::kFailed);
      if (active)
        j.ended_at.reset();
      else
        j.ended_at = *j.started_at + 600;
      auto stmt = db.prepare(insert_job_sql());
      bind_job(stmt, j);
      stmt.run();
    }
    tx.commit();
  }

  auto start = Clock::now();
  auto store = Store::open(dir.db());
  double open_ms = ms_since(start);

  start = Clock::now();
  auto listed = store->jobs({});
  double ps_ms = ms_since(start);

  start = Clock::now();
  auto reconciled = store->reconcile_dead_supervisors();
  double reconcile_ms = ms_since(start);

  start = Clock::now();
  double cpu_start = cpu_ms();
  auto days = store->spend_by_day(std::nullopt);
  double day_ms = ms_since(start);
  double day_cpu_ms = cpu_ms() - cpu_start;

  start = Clock::now();
  cpu_start = cpu_ms();
  auto gpus = store->spend_by_gpu(std::nullopt);
  double gpu_ms = ms_since(start);
  double gpu_cpu_ms = cpu_ms() - cpu_start;

  start = Clock::now();
  auto named = store->find_job("job4999");
  double find_ms = ms_since(start);

  std::printf(
      "100k jobs (wall): open %.1f ms, jobs({}) %.1f ms (%zu rows), reconcile %.1f ms, "
      "spend_by_day %.1f ms (%zu days; %.1f ms CPU), spend_by_gpu %.1f ms (%.1f ms CPU), "
      "find_job by name %.1f ms\n",
      open_ms, ps_ms, listed.size(), reconcile_ms, day_ms, days.size(), day_cpu_ms, gpu_ms,
      gpu_cpu_ms, find_ms);

  EXPECT_EQ(listed.size(), 20u + 50u);
  EXPECT_EQ(reconciled.size(), 20u);  // their supervisor pid 1234 is not a live nodus
  EXPECT_GE(days.size(), 340u);
  EXPECT_EQ(gpus.size(), 4u);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->id, kJobs);
  // Interactive target is < 100 ms; the bounds are generous for a loaded 2-core machine.
  EXPECT_LT(ps_ms, 1000);
  EXPECT_LT(day_ms, 1000);
  EXPECT_LT(gpu_ms, 1000);
  EXPECT_LT(find_ms, 1000);
}

}  // namespace
}  // namespace nodus::store
