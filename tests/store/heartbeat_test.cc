// The supervisor's heartbeat (written each tick with the tick's samples) and what it is for:
// a job whose supervisor died is billed up to it, never past the job's caps. And what a sweep
// has spent across every attempt.

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "store/sqlite.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;

// A pid that is certainly not a live process with that start time.
constexpr int64_t kDeadPid = 1;
constexpr int64_t kDeadStart = 12345;

JobRecord running_job(double started_at) {
  JobRecord j = testing::plain_job(JobState::kRunning);
  j.gpu_type = "H100";
  j.gpu_count = 2;
  j.rate_per_gpu_hour = 3600;  // $1 per GPU-second: $2 a second
  j.started_at = started_at;
  j.supervisor_pid = kDeadPid;
  j.supervisor_start = kDeadStart;
  return j;
}

TEST(StoreHeartbeat, WriteTickStoresHeartbeatAndSamplesTogether) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t id = store->insert_job(testing::plain_job(JobState::kRunning));
  EXPECT_FALSE(store->heartbeat(id));
  Store::SeriesBatch batch;
  batch.heartbeat = 1000.5;
  batch.metrics = {{1000, "loss", 1.5}};
  GpuSample g;
  g.t = 1000;
  g.util_gpu = 50;
  batch.gpu = {g};
  store->write_tick(id, batch);
  EXPECT_EQ(store->heartbeat(id), 1000.5);
  EXPECT_EQ(store->metrics(id).size(), 1u);
  EXPECT_EQ(store->gpu_samples(id).size(), 1u);
}

TEST(StoreHeartbeat, LostJobIsBilledToItsLastHeartbeat) {
  TempDir dir;
  auto store = Store::open(dir.db());
  const double start = unix_now() - 3600;  // found dead an hour later
  int64_t id = store->insert_job(running_job(start));
  Store::SeriesBatch beat;
  beat.heartbeat = start + 1.5;
  store->write_tick(id, beat);
  EXPECT_EQ(store->reconcile_dead_supervisors(), std::vector<int64_t>{id});
  JobRecord lost = *store->job(id);
  EXPECT_EQ(lost.state, JobState::kLost);
  EXPECT_NEAR(lost.cost, 3.0, 1e-9);  // 1.5 s x 2 GPUs x $1/s, not an hour's $7200
  EXPECT_NEAR(*lost.ended_at, start + 1.5, 1e-6);
  EXPECT_NE(lost.note.find("billed to its last heartbeat at "), std::string::npos) << lost.note;
}

TEST(StoreHeartbeat, LostJobIsNeverBilledPastItsCaps) {
  TempDir dir;
  auto store = Store::open(dir.db());
  const double start = unix_now() - 100;
  JobRecord capped = running_job(start);
  capped.max_cost = 0.02;
  int64_t a = store->insert_job(capped);
  JobRecord budget = running_job(start);
  budget.options = {{"budget_cap", 0.5}};
  int64_t b = store->insert_job(budget);
  JobRecord timed = running_job(start);
  timed.timeout_ms = 2000;
  timed.grace_ms = 1000;
  int64_t c = store->insert_job(timed);
  JobRecord old = running_job(start);  // no heartbeat at all (an older nodus wrote it)
  old.max_cost = 1;
  int64_t d = store->insert_job(old);
  for (int64_t id : {a, b, c}) {
    Store::SeriesBatch beat;
    beat.heartbeat = start + 50;
    store->write_tick(id, beat);
  }
  store->reconcile_dead_supervisors();
  EXPECT_NEAR(store->job(a)->cost, 0.02, 1e-12);
  EXPECT_NE(store->job(a)->note.find("capped at"), std::string::npos);
  EXPECT_NEAR(store->job(b)->cost, 0.5, 1e-12);
  EXPECT_NEAR(store->job(c)->cost, 6.0, 1e-9);  // (2 s + 1 s grace) x $2/s
  EXPECT_NEAR(store->job(d)->cost, 1.0, 1e-12);
}

TEST(StoreHeartbeat, SchemaHasTheHeartbeatColumn) {
  TempDir dir;
  { auto store = Store::open(dir.db()); }
  Db db(dir.db(), std::chrono::seconds(1));
  auto v = db.prepare("PRAGMA user_version");
  ASSERT_TRUE(v.step());
  EXPECT_GE(v.i32(0), 3);
  auto col =
      db.prepare("SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'heartbeat_at'");
  ASSERT_TRUE(col.step());
  EXPECT_EQ(col.i64(0), 1);
}

TEST(StoreSweepSpent, CountsEveryAttemptOfEveryCell) {
  TempDir dir;
  auto store = Store::open(dir.db());
  SweepRecord s;
  s.argv = {"true"};
  s.created_at = unix_now();
  s.id = store->insert_sweep(s);
  for (double cost : {0.004, 0.003, 0.002}) {  // cell 0 tried twice, cell 1 once
    JobRecord j = testing::plain_job(JobState::kFailed);
    j.sweep_id = s.id;
    j.cell_index = cost == 0.002 ? 1 : 0;
    j.cost = cost;
    store->insert_job(j);
  }
  EXPECT_NEAR(store->sweep_spent(s.id), 0.009, 1e-12);
  EXPECT_EQ(store->sweep_spent(s.id + 1), 0);
}

}  // namespace
}  // namespace nodus::store
