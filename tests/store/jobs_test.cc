// Jobs and sweeps: every field survives a round trip, secrets do not, listings pick the rows
// `ps` and `sweep` need.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "store/job_rows.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;

SweepRecord a_sweep(const std::string& name = "workers") {
  SweepRecord s;
  s.name = name;
  s.argv = {"python", "train.py", "--workers", "{num_workers}"};
  s.definition = {{"grid", {{"num_workers", {4, 8, 16}}}}, {"budget", 3}};
  s.definition_hash = "abc123";
  s.budget = 3.0;
  s.created_at = 1'700'000'000;
  s.supervisor_pid = 77;
  s.supervisor_start = 88;
  return s;
}

void expect_same(const JobRecord& a, const JobRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.backend_id, b.backend_id);
  EXPECT_EQ(a.argv, b.argv);
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.workdir, b.workdir);
  EXPECT_EQ(a.image, b.image);
  EXPECT_EQ(a.gpu_type, b.gpu_type);
  EXPECT_EQ(a.gpu_count, b.gpu_count);
  EXPECT_EQ(a.gpu_indices, b.gpu_indices);
  EXPECT_EQ(a.inventory_source, b.inventory_source);
  EXPECT_EQ(a.rate_per_gpu_hour, b.rate_per_gpu_hour);
  EXPECT_EQ(a.max_cost, b.max_cost);
  EXPECT_EQ(a.timeout_ms, b.timeout_ms);
  EXPECT_EQ(a.grace_ms, b.grace_ms);
  EXPECT_EQ(a.options, b.options);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.signal, b.signal);
  EXPECT_EQ(a.created_at, b.created_at);
  EXPECT_EQ(a.started_at, b.started_at);
  EXPECT_EQ(a.ended_at, b.ended_at);
  EXPECT_EQ(a.cost, b.cost);
  EXPECT_EQ(a.supervisor_pid, b.supervisor_pid);
  EXPECT_EQ(a.supervisor_start, b.supervisor_start);
  EXPECT_EQ(a.log_path, b.log_path);
  EXPECT_EQ(a.metrics_path, b.metrics_path);
  EXPECT_EQ(a.note, b.note);
  EXPECT_EQ(a.sweep_id, b.sweep_id);
  EXPECT_EQ(a.cell_index, b.cell_index);
  EXPECT_EQ(a.cell_key, b.cell_key);
  EXPECT_EQ(a.params, b.params);
}

TEST(StoreJobs, EveryFieldRoundTrips) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::full_job();
  j.sweep_id = store->insert_sweep(a_sweep());
  j.id = store->insert_job(j);
  auto back = store->job(j.id);
  ASSERT_TRUE(back);
  expect_same(*back, j);
}

TEST(StoreJobs, EmptyOptionalsRoundTripAsEmpty) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::plain_job(JobState::kWaiting);
  j.id = store->insert_job(j);
  auto back = store->job(j.id);
  ASSERT_TRUE(back);
  expect_same(*back, j);
  EXPECT_FALSE(back->max_cost);
  EXPECT_FALSE(back->started_at);
  EXPECT_FALSE(back->sweep_id);
  EXPECT_TRUE(back->gpu_indices.empty());
}

TEST(StoreJobs, UpdateWritesEveryColumn) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::plain_job(JobState::kWaiting);
  j.id = store->insert_job(j);
  JobRecord full = testing::full_job("renamed");
  full.id = j.id;
  full.state = JobState::kCostCap;
  store->update_job(full);
  expect_same(*store->job(j.id), full);
}

TEST(StoreJobs, UpdatingAMissingJobIsAnError) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::plain_job();
  j.id = 99;
  EXPECT_THROW(store->update_job(j), Fatal);
}

TEST(StoreJobs, WritesTogetherAreStoredTogether) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::plain_job(JobState::kWaiting);
  store->together([&] {
    j.id = store->insert_job(j);
    j.log_path = "/tmp/logs/" + std::to_string(j.id) + ".log";
    store->update_job(j);
    store->write_tick(j.id, {12.5, {}, {}, {}});
  });
  expect_same(*store->job(j.id), j);
  EXPECT_EQ(store->heartbeat(j.id), 12.5);
}

TEST(StoreJobs, WritesTogetherAreNoneOfThemWhenOneFails) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::plain_job(JobState::kWaiting);
  j.id = store->insert_job(j);
  JobRecord missing = testing::plain_job();
  missing.id = j.id + 100;
  EXPECT_THROW(store->together([&] {
    store->write_tick(j.id, {12.5, {}, {}, {}});
    store->insert_job(testing::plain_job(JobState::kWaiting));
    store->update_job(missing);  // no such row: the insert and the tick are rolled back too
  }),
               Fatal);
  EXPECT_FALSE(store->heartbeat(j.id));
  JobFilter every;
  every.all = true;
  EXPECT_EQ(store->jobs(every).size(), 1u);
  // The connection is usable again, outside any transaction.
  store->write_tick(j.id, {13.0, {}, {}, {}});
  EXPECT_EQ(store->heartbeat(j.id), 13.0);
}

TEST(StoreJobs, SecretEnvValuesNeverReachTheFile) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::plain_job();
  j.env = {{"WANDB_API_KEY", "s3cr3t-key"}, {"HF_TOKEN", "hf_abc"}, {"BATCH", "64"}};
  j.id = store->insert_job(j);
  auto back = store->job(j.id);
  EXPECT_EQ(back->env["WANDB_API_KEY"], kRedacted);
  EXPECT_EQ(back->env["HF_TOKEN"], kRedacted);
  EXPECT_EQ(back->env["BATCH"], "64");

  j.env["DB_PASSWORD"] = "hunter2";
  store->update_job(j);
  EXPECT_EQ(store->job(j.id)->env["DB_PASSWORD"], kRedacted);
  store.reset();

  // Closing does not checkpoint (each `nodus run` would pay two fdatasync): read the WAL too.
  std::string bytes;
  for (const std::string& file : {dir.db(), dir.db() + "-wal"}) {
    std::ifstream in(file, std::ios::binary);
    bytes.append((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(bytes.find("BATCH"), std::string::npos);  // the file is readable as bytes...
  for (const char* secret : {"s3cr3t-key", "hf_abc", "hunter2"})
    EXPECT_EQ(bytes.find(secret), std::string::npos) << secret;  // ...and holds no secret
}

TEST(StoreJobs, IdsAreNeverReused) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t first = store->insert_job(testing::plain_job());
  int64_t second = store->insert_job(testing::plain_job());
  {
    Db db(dir.db(), std::chrono::seconds(1));
    db.exec("DELETE FROM jobs WHERE id = " + std::to_string(second));
  }
  int64_t third = store->insert_job(testing::plain_job());
  EXPECT_LT(first, second);
  EXPECT_GT(third, second);
}

TEST(StoreJobs, FindJobByIdOrNewestOfAName) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t old_bert = store->insert_job(testing::full_job("bert"));
  int64_t new_bert = store->insert_job(testing::full_job("bert"));
  EXPECT_EQ(store->find_job(std::to_string(old_bert))->id, old_bert);
  EXPECT_EQ(store->find_job("bert")->id, new_bert);
  EXPECT_FALSE(store->find_job("gpt"));
  EXPECT_FALSE(store->find_job("12345"));
}

TEST(StoreJobs, ListingShowsActiveJobsAndTheNewestFinishedOnes) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t old_running = store->insert_job(testing::plain_job(JobState::kRunning));
  std::vector<int64_t> finished;
  for (int i = 0; i < 10; ++i) finished.push_back(store->insert_job(testing::plain_job()));
  int64_t waiting = store->insert_job(testing::plain_job(JobState::kWaiting));

  auto listed = store->jobs(testing::recent_jobs(3));
  std::vector<int64_t> ids;
  for (const auto& j : listed) ids.push_back(j.id);
  EXPECT_EQ(ids,
            (std::vector<int64_t>{waiting, finished[9], finished[8], finished[7], old_running}));

  EXPECT_EQ(store->jobs(testing::every_job()).size(), 12u);
  EXPECT_EQ(store->active_jobs().size(), 2u);
}

TEST(StoreJobs, ListingFiltersBySweep) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t sweep = store->insert_sweep(a_sweep());
  store->insert_job(testing::plain_job());
  JobRecord cell = testing::plain_job();
  cell.sweep_id = sweep;
  int64_t a = store->insert_job(cell);
  int64_t b = store->insert_job(cell);
  auto listed = store->jobs(testing::every_job(sweep));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].id, b);
  EXPECT_EQ(listed[1].id, a);
  EXPECT_EQ(store->jobs(testing::recent_jobs(50, sweep)).size(), 2u);
}

TEST(StoreJobs, EachJobCarriesWhatAListingShowsAndLeavesTheRest) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::full_job();
  j.sweep_id = store->insert_sweep(a_sweep());
  j.id = store->insert_job(j);
  std::vector<JobRecord> seen;
  store->each_job(testing::every_job(), 1, [&](int, const JobRecord& job) { seen.push_back(job); });
  ASSERT_EQ(seen.size(), 1u);
  const JobRecord& got = seen[0];
  EXPECT_EQ(got.id, j.id);
  EXPECT_EQ(got.name, j.name);
  EXPECT_EQ(got.argv, j.argv);
  EXPECT_EQ(got.gpu_type, j.gpu_type);
  EXPECT_EQ(got.gpu_count, j.gpu_count);
  EXPECT_EQ(got.gpu_indices, j.gpu_indices);
  EXPECT_EQ(got.rate_per_gpu_hour, j.rate_per_gpu_hour);
  EXPECT_EQ(got.max_cost, j.max_cost);
  EXPECT_EQ(got.state, j.state);
  EXPECT_EQ(got.exit_code, j.exit_code);
  EXPECT_EQ(got.created_at, j.created_at);
  EXPECT_EQ(got.started_at, j.started_at);
  EXPECT_EQ(got.ended_at, j.ended_at);
  EXPECT_EQ(got.cost, j.cost);
  EXPECT_EQ(got.sweep_id, j.sweep_id);
  EXPECT_EQ(got.cell_index, j.cell_index);
  // Not read for a listing: the env, the note and the paths stay empty.
  EXPECT_TRUE(got.env.empty());
  EXPECT_EQ(got.note, "");
  EXPECT_EQ(got.log_path, "");
  EXPECT_EQ(got.workdir, "");
}

TEST(StoreJobs, EveryPassOfEachJobSeesTheSameRowsWhileAnotherProcessWrites) {
  TempDir dir;
  auto store = Store::open(dir.db());
  for (int i = 0; i < 3; ++i) store->insert_job(testing::plain_job(JobState::kRunning));
  auto other = Store::open(dir.db());  // its own connection, as another nodus would have
  std::vector<std::vector<std::pair<int64_t, JobState>>> passes(2);
  store->each_job(testing::every_job(), 2, [&](int pass, const JobRecord& job) {
    if (pass == 0 && passes[0].empty()) {
      // Between the measuring pass and the printing one: a new job, a job that ends.
      other->insert_job(testing::plain_job(JobState::kRunning));
      auto first = other->job(job.id);
      first->state = JobState::kCompleted;
      other->update_job(*first);
    }
    passes[pass].push_back({job.id, job.state});
  });
  EXPECT_EQ(passes[0].size(), 3u);
  EXPECT_EQ(passes[0], passes[1]);
  EXPECT_EQ(passes[1][0].second, JobState::kRunning);
  EXPECT_EQ(store->jobs(testing::every_job()).size(), 4u);  // the new job is there after
}

TEST(StoreJobs, EachJobOfTheRecentListingIsJobsInItsOrder) {
  TempDir dir;
  auto store = Store::open(dir.db());
  store->insert_job(testing::plain_job(JobState::kRunning));
  for (int i = 0; i < 5; ++i) store->insert_job(testing::plain_job());
  std::vector<int64_t> want, got;
  for (const auto& j : store->jobs(testing::recent_jobs(2))) want.push_back(j.id);
  store->each_job(testing::recent_jobs(2), 2, [&](int pass, const JobRecord& job) {
    if (pass == 1) got.push_back(job.id);
  });
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), 3u);
}

TEST(StoreSweeps, RoundTripAndUpdate) {
  TempDir dir;
  auto store = Store::open(dir.db());
  SweepRecord s = a_sweep();
  s.id = store->insert_sweep(s);
  auto back = store->sweep(s.id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, s.name);
  EXPECT_EQ(back->backend, "local");
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->definition, s.definition);
  EXPECT_EQ(back->definition_hash, s.definition_hash);
  EXPECT_EQ(back->state, "running");
  EXPECT_EQ(back->budget, 3.0);
  EXPECT_EQ(back->created_at, s.created_at);
  EXPECT_FALSE(back->ended_at);
  EXPECT_EQ(back->supervisor_pid, 77);
  EXPECT_EQ(back->supervisor_start, 88);

  s.state = "budget";
  s.ended_at = 1'700'000'100;
  s.budget.reset();
  store->update_sweep(s);
  back = store->sweep(s.id);
  EXPECT_EQ(back->state, "budget");
  EXPECT_EQ(back->ended_at, 1'700'000'100);
  EXPECT_FALSE(back->budget);
}

TEST(StoreSweeps, FindBySPrefixedIdBareIdOrName) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t first = store->insert_sweep(a_sweep("lr"));
  int64_t second = store->insert_sweep(a_sweep("lr"));
  EXPECT_EQ(store->find_sweep("s" + std::to_string(first))->id, first);
  EXPECT_EQ(store->find_sweep(std::to_string(first))->id, first);
  EXPECT_EQ(store->find_sweep("lr")->id, second);
  EXPECT_FALSE(store->find_sweep("s999"));
  EXPECT_FALSE(store->find_sweep("nope"));
  auto listed = store->sweeps(10);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].id, second);
}

TEST(StoreSweeps, CellsAreTheNewestAttemptPerCellInCellOrder) {
  TempDir dir;
  auto store = Store::open(dir.db());
  int64_t sweep = store->insert_sweep(a_sweep());
  auto cell = [&](int index, JobState state) {
    JobRecord j = testing::plain_job(state);
    j.sweep_id = sweep;
    j.cell_index = index;
    j.cell_key = "num_workers=" + std::to_string(index);
    return store->insert_job(j);
  };
  cell(2, JobState::kCompleted);
  cell(0, JobState::kFailed);  // attempt 1 of cell 0
  int64_t c1 = cell(1, JobState::kCompleted);
  int64_t c0 = cell(0, JobState::kCompleted);  // attempt 2 of cell 0
  int64_t c2 = cell(2, JobState::kTimeout);    // attempt 2 of cell 2
  auto cells = store->sweep_cells(sweep);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].id, c0);
  EXPECT_EQ(cells[1].id, c1);
  EXPECT_EQ(cells[2].id, c2);
  EXPECT_EQ(cells[2].state, JobState::kTimeout);
}

TEST(StoreJobs, AFailedWriteLeavesNoRow) {
  TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord j = testing::plain_job();
  j.sweep_id = 12345;  // no such sweep: the foreign key refuses the row
  EXPECT_THROW(store->insert_job(j), Fatal);
  EXPECT_TRUE(store->jobs(testing::every_job()).empty());
  store->insert_job(testing::plain_job());  // the store still works
  EXPECT_EQ(store->jobs(testing::every_job()).size(), 1u);
}

// Issue 28: a damaged sweep row (argv not JSON, a definition that is not an object) is read with
// those columns empty and named, so `sweeps` and `show` keep working; an update of the row (the
// state) never overwrites what is stored with the empty values.
TEST(StoreJobs, ADamagedSweepRowIsReadEmptyNamedAndNotOverwritten) {
  testing::TempDir dir;
  auto store = Store::open(dir.db());
  const int64_t bad = store->insert_sweep(a_sweep("bad"));
  const int64_t good = store->insert_sweep(a_sweep("good"));
  {
    Db raw(dir.db(), std::chrono::seconds(1));
    raw.exec("UPDATE sweeps SET argv = 'not json{', definition = '[1]' WHERE id = " +
             std::to_string(bad));
  }
  auto list = store->sweeps(10);
  ASSERT_EQ(list.size(), 2u);
  auto damaged = store->sweep(bad);
  ASSERT_TRUE(damaged);
  EXPECT_TRUE(damaged->argv.empty());
  EXPECT_TRUE(damaged->definition->is_object());
  EXPECT_EQ(damaged->damaged, "the store's argv of sweep s" + std::to_string(bad) +
                                  " is unreadable (not JSON): shown empty; the store's definition "
                                  "of sweep s" +
                                  std::to_string(bad) +
                                  " is unreadable (JSON of the wrong shape): shown empty");
  damaged->state = "interrupted";
  store->update_sweep(*damaged);
  {
    Db raw(dir.db(), std::chrono::seconds(1));
    auto stmt = raw.prepare("SELECT argv, definition, state FROM sweeps WHERE id = ?");
    stmt.bind_all(bad);
    ASSERT_TRUE(stmt.step());
    EXPECT_EQ(stmt.text(0), "not json{");
    EXPECT_EQ(stmt.text(1), "[1]");
    EXPECT_EQ(stmt.text(2), "interrupted");
  }
  EXPECT_TRUE(store->sweep(good)->damaged.empty());
}

}  // namespace
}  // namespace nodus::store

namespace nodus::store {
namespace {

// Issue 28, case 6: one damaged row (argv that is not JSON, env of the wrong shape) leaves the
// listing readable: that job is read with the column empty and a note saying so; the others are
// whole. Before, `ps`, `show` and `cost` all failed on it.
TEST(StoreJobs, ADamagedJsonColumnEmptiesThatColumnNotTheListing) {
  testing::TempDir dir;
  auto store = Store::open(dir.db());
  JobRecord job;
  job.argv = {"python", "train.py"};
  job.env = {{"A", "1"}};
  job.note = "its own note";
  job.created_at = 1'700'000'000;
  const int64_t bad = store->insert_job(job);
  const int64_t good = store->insert_job(job);
  {
    Db raw(dir.db(), std::chrono::seconds(1));
    raw.exec("UPDATE jobs SET argv = 'not json{', env = '[1, 2]' WHERE id = " +
             std::to_string(bad));
  }
  auto damaged = store->job(bad);
  ASSERT_TRUE(damaged);
  EXPECT_TRUE(damaged->argv.empty());
  EXPECT_TRUE(damaged->env.empty());
  EXPECT_EQ(damaged->note,
            "the store's argv of this job is unreadable (not JSON): shown empty; the store's env "
            "of this job is unreadable (JSON of the wrong shape): shown empty; its own note");
  auto whole = store->job(good);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->argv, job.argv);
  EXPECT_EQ(whole->note, "its own note");
  JobFilter all;
  all.all = true;
  EXPECT_EQ(store->jobs(all).size(), 2u);
}

// The argv fast path reads what the JSON parser reads whenever it reads anything, and leaves
// to the parser everything but the plain form the store writes.
TEST(PlainStringList, ReadsThePlainFormAndAgreesWithTheJsonParser) {
  const std::vector<std::string> plain = {R"([])", R"([""])", R"(["python","train.py","--lr=0.1"])",
                                          R"(["]"])", R"(["a b","[x]",",","{}"])"};
  const std::vector<std::string> other = {"",
                                          "[",
                                          "]",
                                          "[,]",
                                          R"(["a",])",
                                          R"(["a" ])",
                                          R"([ "a"])",
                                          R"(["a""b"])",
                                          R"(["a)",
                                          R"(["a","])",
                                          R"(["a\"b"])",
                                          R"(["\u00e9"])",
                                          "[\"\xc3\xa9\"]",
                                          "[\"a\tb\"]",
                                          R"([1])",
                                          R"(["a",1])",
                                          R"({"a":"b"})",
                                          R"("a")",
                                          R"([["a"]])",
                                          R"(["a"]x)",
                                          R"(x["a"])",
                                          "[\"a\x7f\"]"};
  for (const std::string& text : plain) {
    auto fast = plain_string_list(text);
    ASSERT_TRUE(fast) << text;
    EXPECT_EQ(nlohmann::json(*fast), nlohmann::json::parse(text)) << text;
    EXPECT_EQ(nlohmann::json(*fast).dump(), text) << text;  // the form dump() writes
  }
  for (const std::string& text : other) {
    auto fast = plain_string_list(text);
    EXPECT_FALSE(fast) << text;
  }
}

// Every argv, plain or not, reads back as it was stored, in full rows and listing rows alike;
// one damaged the fast path does not take is still named in the note.
TEST(StoreJobs, EveryArgvReadsBackWhicheverWayItIsRead) {
  testing::TempDir dir;
  auto store = Store::open(dir.db());
  const std::vector<std::vector<std::string>> argvs = {{},
                                                       {""},
                                                       {"python", "train.py", "--lr=0.1"},
                                                       {"sh", "-c", "echo \"hi\" \\ there"},
                                                       {"caf\xc3\xa9", "\xe6\xb7\xb1"},
                                                       {"tab\there", "nl\nthere"},
                                                       {"]", "[", ",", "\""}};
  std::vector<int64_t> ids;
  for (const auto& argv : argvs) {
    JobRecord job;
    job.argv = argv;
    job.created_at = 1'700'000'000;
    ids.push_back(store->insert_job(job));
  }
  JobRecord job;
  job.created_at = 1'700'000'000;
  const int64_t bad = store->insert_job(job);
  {
    Db raw(dir.db(), std::chrono::seconds(1));
    raw.exec("UPDATE jobs SET argv = '[\"a\",]' WHERE id = " + std::to_string(bad));
  }
  for (size_t i = 0; i < argvs.size(); ++i) {
    auto read = store->job(ids[i]);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->argv, argvs[i]) << i;
  }
  std::map<int64_t, JobRecord> listed;
  JobFilter all;
  all.all = true;
  store->each_job(all, 1, [&](int, const JobRecord& j) { listed[j.id] = j; });
  ASSERT_EQ(listed.size(), argvs.size() + 1);
  for (size_t i = 0; i < argvs.size(); ++i) EXPECT_EQ(listed[ids[i]].argv, argvs[i]) << i;
  EXPECT_TRUE(listed[bad].argv.empty());
  EXPECT_EQ(listed[bad].note, "the store's argv of this job is unreadable (not JSON): shown empty");
}

}  // namespace
}  // namespace nodus::store
