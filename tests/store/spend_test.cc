// Spend summaries by local day, GPU type, sweep and job name.

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <map>
#include <set>

#include "store/sqlite.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;

std::string local_day(double t) {
  time_t secs = static_cast<time_t>(t);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

JobRecord billed(const std::string& type, int gpus, double rate, double start, double hours,
                 JobState state = JobState::kCompleted) {
  JobRecord j = testing::plain_job(state);
  j.gpu_type = type;
  j.gpu_count = gpus;
  j.rate_per_gpu_hour = rate;
  j.started_at = start;
  if (is_final(state)) {
    j.ended_at = start + hours * 3600;
    j.cost = gpus * rate * hours;
  }
  return j;
}

class StoreSpend : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = Store::open(dir_.db());
    // Noon today and noon two days ago, local time, so day boundaries are not near.
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::localtime_r(&now, &tm);
    tm.tm_hour = 12;
    tm.tm_min = tm.tm_sec = 0;
    tm.tm_isdst = -1;
    today_noon_ = static_cast<double>(std::mktime(&tm));
    tm.tm_mday -= 2;
    tm.tm_isdst = -1;
    earlier_noon_ = static_cast<double>(std::mktime(&tm));

    store_->insert_job(billed("H100", 8, 2.6, earlier_noon_, 1));         // $20.80, 8 GPU-h
    store_->insert_job(billed("L4", 1, 0.8, earlier_noon_ + 60, 2));      // $1.60, 2 GPU-h
    store_->insert_job(billed("H100", 1, 2.6, today_noon_ - 7200, 0.5));  // $1.30, 0.5 GPU-h
    // Running for an hour now: counts what it has cost so far.
    store_->insert_job(billed("H100", 2, 3.0, unix_now() - 3600, 0, JobState::kRunning));
    store_->insert_job(billed("", 0, 0, earlier_noon_, 1));      // CPU-only
    store_->insert_job(testing::plain_job(JobState::kWaiting));  // never started: no spend
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  double today_noon_ = 0, earlier_noon_ = 0;
};

TEST_F(StoreSpend, ByLocalDayOldestFirst) {
  auto rows = store_->spend_by_day(std::nullopt);
  std::string earlier = local_day(earlier_noon_);
  std::string running_day = local_day(unix_now() - 3600);
  std::string today = local_day(today_noon_ - 7200);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, earlier);
  EXPECT_EQ(rows[0].jobs, 3);
  EXPECT_NEAR(rows[0].cost, 22.40, 1e-9);
  EXPECT_NEAR(rows[0].gpu_hours, 10.0, 1e-9);
  double total_cost = 0, total_hours = 0;
  int total_jobs = 0;
  for (const auto& r : rows) {
    total_cost += r.cost;
    total_hours += r.gpu_hours;
    total_jobs += r.jobs;
  }
  EXPECT_EQ(total_jobs, 5);
  EXPECT_NEAR(total_cost, 22.40 + 1.30 + 6.0, 0.01);
  EXPECT_NEAR(total_hours, 10.0 + 0.5 + 2.0, 0.01);
  if (running_day == today) {
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].key, today);
    EXPECT_NEAR(rows[1].cost, 7.30, 0.01);
  }
}

TEST_F(StoreSpend, ByGpuTypeMostExpensiveFirstWithoutCpuOnlyJobs) {
  auto rows = store_->spend_by_gpu(std::nullopt);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "H100");
  EXPECT_EQ(rows[0].jobs, 3);
  EXPECT_NEAR(rows[0].cost, 20.80 + 1.30 + 6.0, 0.01);
  EXPECT_NEAR(rows[0].gpu_hours, 8 + 0.5 + 2.0, 0.01);
  EXPECT_EQ(rows[1].key, "L4");
  EXPECT_NEAR(rows[1].cost, 1.60, 1e-9);
}

TEST_F(StoreSpend, SinceLeavesOutEarlierJobs) {
  auto rows = store_->spend_by_gpu(today_noon_ - 86400);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, "H100");
  EXPECT_EQ(rows[0].jobs, 2);
  for (const auto& r : store_->spend_by_day(today_noon_ - 86400))
    EXPECT_NE(r.key, local_day(earlier_noon_));
}

// `nodus cost` by default: both summaries from one walk, row for row what each walk alone gives.
// The running job (2 GPUs at $3/h) costs more with every second between the walks, so each row
// may differ by what that job gained in the time the walks took, however slow the machine is.
TEST_F(StoreSpend, DayAndGpuFromOneWalkAreEachSummary) {
  store_->insert_job(billed("A100", 4, 0, earlier_noon_ + 120, 1));  // free: no cost, GPU hours
  auto same = [](const std::vector<Store::SpendRow>& a, const std::vector<Store::SpendRow>& b,
                 double seconds) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].key, b[i].key) << i;
      EXPECT_EQ(a[i].jobs, b[i].jobs) << i;
      EXPECT_NEAR(a[i].gpu_hours, b[i].gpu_hours, 2.0 / 3600 * seconds + 1e-9) << i;
      EXPECT_NEAR(a[i].cost, b[i].cost, 6.0 / 3600 * seconds + 1e-9) << i;
    }
  };
  for (std::optional<double> since : {std::optional<double>(), std::optional(today_noon_ - 86400),
                                      std::optional(unix_now() + 86400)}) {
    for (bool cpu : {false, true}) {
      const double start = unix_now();
      auto [days, gpus] = store_->spend_by_day_and_gpu(since, std::nullopt, cpu);
      auto by_day = store_->spend_by_day(since);
      auto by_gpu = store_->spend_by_gpu(since, std::nullopt, cpu);
      const double seconds = unix_now() - start;
      same(days, by_day, seconds);
      same(gpus, by_gpu, seconds);
    }
  }
  auto [days, gpus] = store_->spend_by_day_and_gpu(std::nullopt, std::nullopt, true);
  // Two days, or three in the hour after midnight: the running job started yesterday then.
  const std::set<std::string> started{local_day(earlier_noon_), local_day(today_noon_ - 7200),
                                      local_day(unix_now() - 3600)};
  EXPECT_EQ(days.size(), started.size());
  EXPECT_EQ(gpus.size(), 4u);  // H100, L4, A100 and CPU-only ("")
}

// By sweep and by job name: a row per group, most expensive first, equal costs by key; jobs
// without a sweep under "", never-started jobs nowhere, a running job at its cost so far.
class StoreSpendGroups : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = Store::open(dir_.db());
    const double t = unix_now() - 5 * 86400;
    for (int i = 0; i < 11; ++i) {  // sweeps s1..s11: s10 and s2 cost the same
      SweepRecord s;
      s.name = "sweep" + std::to_string(i + 1);
      s.argv = {"true"};
      s.state = "completed";
      s.created_at = t;
      sweeps_.push_back(store_->insert_sweep(s));
    }
    auto job = [&](const std::string& name, std::optional<int> sweep, double start, double hours,
                   double rate, JobState state = JobState::kCompleted) {
      JobRecord j = billed("H100", 2, rate, start, hours, state);
      j.name = name;
      if (sweep) j.sweep_id = sweeps_[*sweep - 1];
      store_->insert_job(j);
    };
    job("a", 1, t + 10, 1, 2.0);        // $4
    job("b", 1, t, 0.5, 2.0);           // $2, started first
    job("a", 2, t + 20, 0.25, 2.0);     // $1
    job("c", 10, t + 30, 0.25, 2.0);    // $1: ties s2
    job("b", std::nullopt, t, 2, 1.0);  // $4, not in a sweep
    job("d", std::nullopt, t + 40, 1, 1.5, JobState::kLost);
    job("e", 3, unix_now() - 1800, 0, 1.0, JobState::kRunning);  // 0.5 h so far: $1 and rising
    JobRecord waiting = testing::plain_job(JobState::kWaiting);  // never started: no spend
    waiting.name = "a";
    waiting.sweep_id = sweeps_[3];
    store_->insert_job(waiting);
    JobRecord retried = billed("L4", 1, 0.75, t + 50, 1, JobState::kFailed);  // a retried cell
    retried.name = "c";
    retried.sweep_id = sweeps_[10];
    store_->insert_job(retried);
    retried.started_at = t + 4000;
    retried.ended_at = t + 4000 + 3600;
    retried.state = JobState::kCompleted;
    store_->insert_job(retried);
  }

  // The summary by sweep_id or name as SQLite's GROUP BY computes it over the job rows
  // themselves (NOT INDEXED), for the finished jobs; keyed as the store keys its rows.
  std::map<std::string, Store::SpendRow> grouped_in_sql(const std::string& column) {
    Db db(dir_.db(), std::chrono::seconds(1));
    auto stmt = db.prepare("SELECT " + column +
                           ", count(*), sum(gpu_count * (ended_at - started_at) / 3600.0), "
                           "sum(cost) FROM jobs NOT INDEXED WHERE started_at IS NOT NULL AND "
                           "ended_at IS NOT NULL GROUP BY " +
                           column);
    std::map<std::string, Store::SpendRow> out;
    while (stmt.step()) {
      std::string key = column == "name"  ? stmt.text(0)
                        : stmt.is_null(0) ? ""
                                          : "s" + std::to_string(stmt.i64(0));
      out[key] = {key, stmt.i32(1), stmt.f64(2), stmt.f64(3)};
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::vector<int64_t> sweeps_;
};

TEST_F(StoreSpendGroups, BySweepMostExpensiveFirstEqualCostsByKey) {
  auto rows = store_->spend_by_sweep(std::nullopt, std::nullopt);
  const std::string s1 = "s" + std::to_string(sweeps_[0]), s2 = "s" + std::to_string(sweeps_[1]);
  const std::string s3 = "s" + std::to_string(sweeps_[2]), s10 = "s" + std::to_string(sweeps_[9]);
  const std::string s11 = "s" + std::to_string(sweeps_[10]);
  ASSERT_EQ(rows.size(), 6u);  // s4 has only a job that never started
  EXPECT_EQ(rows[0].key, "");  // $4 + $3 (lost: billed as stored), not in a sweep
  EXPECT_EQ(rows[0].jobs, 2);
  EXPECT_NEAR(rows[0].cost, 7.0, 1e-9);
  EXPECT_EQ(rows[1].key, s1);
  EXPECT_EQ(rows[1].jobs, 2);
  EXPECT_NEAR(rows[1].cost, 6.0, 1e-9);
  EXPECT_NEAR(rows[1].gpu_hours, 3.0, 1e-9);
  EXPECT_EQ(rows[2].key, s11);  // two attempts of a cell at $0.75
  EXPECT_EQ(rows[2].jobs, 2);
  EXPECT_NEAR(rows[2].cost, 1.5, 1e-9);
  EXPECT_EQ(rows[3].key, s3);  // running: 2 GPUs x $1 x 0.5 h so far
  EXPECT_NEAR(rows[3].cost, 1.0, 0.01);
  EXPECT_EQ(rows[4].key, s10);  // $1, as s2: "s10" sorts before "s2"
  EXPECT_EQ(rows[4].cost, 1.0);
  EXPECT_EQ(rows[5].key, s2);
  EXPECT_EQ(rows[5].cost, 1.0);
}

TEST_F(StoreSpendGroups, ByNameMostExpensiveFirst) {
  auto rows = store_->spend_by_name(std::nullopt, std::nullopt);
  ASSERT_EQ(rows.size(), 5u);
  const std::vector<std::pair<std::string, double>> want = {
      {"b", 6.0}, {"a", 5.0}, {"d", 3.0}, {"c", 2.5}, {"e", 1.0}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(rows[i].key, want[i].first) << i;
    EXPECT_NEAR(rows[i].cost, want[i].second, want[i].first == "e" ? 0.01 : 1e-9) << i;
  }
  EXPECT_EQ(rows[0].jobs, 2);
  EXPECT_EQ(rows[3].jobs, 3);
}

TEST_F(StoreSpendGroups, EqualTheSummaryOverTheJobRowsThemselves) {
  for (const std::string column : {"sweep_id", "name"}) {
    auto want = grouped_in_sql(column);
    auto rows = column == "name" ? store_->spend_by_name(std::nullopt, std::nullopt)
                                 : store_->spend_by_sweep(std::nullopt, std::nullopt);
    int jobs = 0;
    for (const auto& row : rows) {
      jobs += row.jobs;
      if (row.key == "e" || row.key == "s" + std::to_string(sweeps_[2])) continue;  // running
      ASSERT_TRUE(want.count(row.key)) << column << " " << row.key;
      const auto& w = want[row.key];
      EXPECT_EQ(row.jobs, w.jobs) << column << " " << row.key;
      EXPECT_NEAR(row.gpu_hours, w.gpu_hours, 1e-9) << column << " " << row.key;
      EXPECT_NEAR(row.cost, w.cost, 1e-9) << column << " " << row.key;
      want.erase(row.key);
    }
    EXPECT_TRUE(want.empty()) << column;
    EXPECT_EQ(jobs, 9) << column;  // every started job, once
  }
}

TEST_F(StoreSpendGroups, ARangeLeavesOutJobsStartedOutsideIt) {
  const double t = unix_now() - 5 * 86400;
  auto rows = store_->spend_by_name(t + 5, t + 45);  // a ($4 then $1), c ($1), d
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].key, "a");
  EXPECT_EQ(rows[0].jobs, 2);
  EXPECT_NEAR(rows[0].cost, 5.0, 1e-9);
  EXPECT_EQ(rows[1].key, "d");
  EXPECT_EQ(rows[2].key, "c");
  EXPECT_EQ(rows[2].jobs, 1);
  EXPECT_TRUE(store_->spend_by_sweep(unix_now() + 60, std::nullopt).empty());
}

// The sums go through a temporary table: a store opened read-only sums the same, twice over
// when asked for two passes, and the next summary starts afresh.
TEST_F(StoreSpendGroups, AReadOnlyStoreSumsTheSameOverEveryPass) {
  auto want = store_->spend_by_name(std::nullopt, std::nullopt);
  auto read_only = Store::open_read_only(dir_.db());
  for (int round = 0; round < 2; ++round) {
    std::vector<std::vector<Store::SpendRow>> passes(2);
    read_only->each_spend_by_name(
        std::nullopt, std::nullopt, 2,
        [&](int pass, const Store::SpendRow& row) { passes.at(pass).push_back(row); });
    for (const auto& rows : passes) {
      ASSERT_EQ(rows.size(), want.size()) << round;
      for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i].key, want[i].key) << round << " " << i;
        EXPECT_EQ(rows[i].jobs, want[i].jobs) << round << " " << i;
        EXPECT_NEAR(rows[i].cost, want[i].cost, rows[i].key == "e" ? 0.01 : 0) << i;
      }
    }
  }
  EXPECT_EQ(read_only->spend_by_sweep(std::nullopt, std::nullopt).size(), 6u);
}

TEST(StoreSpendDays, DaysAreLocalNotUtc) {
  const char* old_tz = std::getenv("TZ");
  std::string saved = old_tz ? old_tz : "";
  ::setenv("TZ", "IST-5:30", 1);  // POSIX form: local time is UTC+05:30
  ::tzset();
  TempDir dir;
  auto store = Store::open(dir.db());
  const double utc_2024_03_10_1800 = 1710093600;  // 23:30 local on the 10th
  store->insert_job(billed("L4", 1, 1.0, utc_2024_03_10_1800, 0.25));
  store->insert_job(billed("L4", 1, 1.0, utc_2024_03_10_1800 + 3600, 0.25));  // 00:30 on the 11th
  store->insert_job(billed("L4", 1, 1.0, utc_2024_03_10_1800 + 7200, 0.25));
  auto rows = store->spend_by_day(std::nullopt);
  if (old_tz) {
    ::setenv("TZ", saved.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "2024-03-10");
  EXPECT_EQ(rows[0].jobs, 1);
  EXPECT_EQ(rows[1].key, "2024-03-11");
  EXPECT_EQ(rows[1].jobs, 2);
  EXPECT_NEAR(rows[1].cost, 0.5, 1e-9);
}

}  // namespace
}  // namespace nodus::store
