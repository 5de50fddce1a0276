// Opening a store: creation, migrations, and the one-line errors for files we cannot use.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <random>

#include "store/schema.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string fatal_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Fatal& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(StoreOpen, CreatesPrivateFolderAndMigratesToTheLatestVersion) {
  TempDir dir;
  std::string path = dir.path() + "/a/b/nodus.db";
  auto store = Store::open(path);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(store->folder(), dir.path() + "/a/b");
  Db db(path, std::chrono::seconds(1));
  EXPECT_EQ(schema_version(db), migrations().back().version);
  auto mode = db.prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.text(0), "wal");
}

TEST(StoreOpen, MigratesAnEmptyFile) {
  TempDir dir;
  { std::ofstream(dir.db()).flush(); }  // zero bytes: SQLite treats it as a new database
  auto store = Store::open(dir.db());
  EXPECT_EQ(store->insert_job(testing::plain_job()), 1);
  EXPECT_EQ(store->integrity_check(), "ok");
}

TEST(StoreOpen, ReopeningKeepsTheData) {
  TempDir dir;
  int64_t id = Store::open(dir.db())->insert_job(testing::full_job());
  auto again = Store::open(dir.db());
  ASSERT_TRUE(again->job(id));
  EXPECT_EQ(again->job(id)->name, "train");
}

TEST(StoreOpen, RefusesANewerSchemaVersion) {
  TempDir dir;
  Store::open(dir.db());
  const int latest = migrations().back().version;
  {
    Db db(dir.db(), std::chrono::seconds(1));
    db.exec("PRAGMA user_version=" + std::to_string(latest + 3));
  }
  EXPECT_EQ(fatal_message([&] { Store::open(dir.db()); }),
            "store " + dir.db() + " has schema version " + std::to_string(latest + 3) +
                "; this nodus knows up to " + std::to_string(latest) + ": upgrade nodus");
}

TEST(StoreMigrate, AppliesMissingMigrationsInOrder) {
  TempDir dir;
  Db db(dir.db(), std::chrono::seconds(1));
  configure_connection(db);
  std::vector<Migration> list = {{1, "CREATE TABLE a (x)"}, {2, "ALTER TABLE a ADD COLUMN y"}};
  migrate(db, {list[0]});
  EXPECT_EQ(schema_version(db), 1);
  migrate(db, list);  // only migration 2 runs (1 again would fail: table a exists)
  EXPECT_EQ(schema_version(db), 2);
  db.exec("INSERT INTO a (x, y) VALUES (1, 2)");
}

TEST(StoreMigrate, AFailingMigrationLeavesNothingBehind) {
  TempDir dir;
  Db db(dir.db(), std::chrono::seconds(1));
  configure_connection(db);
  std::vector<Migration> list = {{1, "CREATE TABLE a (x)"},
                                 {2, "CREATE TABLE b (y)"},
                                 {3, "INSERT INTO no_such_table VALUES (1)"}};
  EXPECT_THROW(migrate(db, list), Fatal);
  EXPECT_EQ(schema_version(db), 0);
  auto tables = db.prepare("SELECT count(*) FROM sqlite_master");
  ASSERT_TRUE(tables.step());
  EXPECT_EQ(tables.i64(0), 0);
}

// A store as version 3 left it: version 4 only adds the spend indexes by sweep and by name.
void make_version_3(const std::string& path) {
  Db db(path, std::chrono::seconds(1));
  db.exec("DROP INDEX jobs_spend_sweep; DROP INDEX jobs_spend_name; PRAGMA user_version=3");
}

std::vector<std::string> index_names(const std::string& path) {
  Db db(path, std::chrono::seconds(1));
  auto stmt = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name");
  std::vector<std::string> names;
  while (stmt.step()) names.push_back(stmt.text(0));
  return names;
}

TEST(StoreMigrate, Version4AddsTheSpendIndexesOnceAndKeepsEveryRow) {
  ASSERT_EQ(migrations().back().version, 4);
  TempDir dir;
  std::vector<JobRecord> jobs;
  {
    auto store = Store::open(dir.db());
    SweepRecord sweep;
    sweep.name = "lr";
    sweep.argv = {"true"};
    sweep.state = "completed";
    int64_t sweep_id = store->insert_sweep(sweep);
    for (int i = 0; i < 50; ++i) {
      JobRecord j = testing::full_job("job" + std::to_string(i % 7));
      j.sweep_id = i % 3 ? std::optional<int64_t>(sweep_id) : std::nullopt;
      j.started_at = 1'700'000'000.0 + i * 100;
      j.ended_at = *j.started_at + 50 + i;
      j.cost = 0.01 * i;
      if (i % 10 == 0) j.started_at = j.ended_at = std::nullopt;  // never started
      j.id = store->insert_job(j);
      jobs.push_back(j);
    }
  }
  auto all_indexes = index_names(dir.db());
  make_version_3(dir.db());
  auto old_indexes = index_names(dir.db());
  EXPECT_EQ(old_indexes.size() + 2, all_indexes.size());

  auto store = Store::open(dir.db());
  {
    Db db(dir.db(), std::chrono::seconds(1));
    EXPECT_EQ(schema_version(db), 4);
  }
  EXPECT_EQ(index_names(dir.db()), all_indexes);
  auto back = store->jobs(testing::every_job());
  ASSERT_EQ(back.size(), jobs.size());
  for (const auto& j : jobs) {
    auto row = store->job(j.id);
    ASSERT_TRUE(row) << j.id;
    EXPECT_EQ(row->name, j.name);
    EXPECT_EQ(row->sweep_id, j.sweep_id);
    EXPECT_EQ(row->started_at, j.started_at);
    EXPECT_EQ(row->ended_at, j.ended_at);
    EXPECT_EQ(row->cost, j.cost);
  }
  EXPECT_EQ(store->integrity_check(), "ok");
  store.reset();
  // Opening again migrates nothing (creating an index twice would fail).
  EXPECT_NO_THROW(Store::open(dir.db()));
  EXPECT_EQ(index_names(dir.db()), all_indexes);
}

TEST(StoreMigrate, AVersion4MigrationThatFailsLeavesVersion3AsItWas) {
  TempDir dir;
  Store::open(dir.db())->insert_job(testing::full_job());
  make_version_3(dir.db());
  {
    // The second index's name taken: its CREATE INDEX fails after the first one's succeeded.
    Db db(dir.db(), std::chrono::seconds(1));
    db.exec("CREATE TABLE jobs_spend_name (x)");
  }
  auto before = index_names(dir.db());
  EXPECT_THAT(fatal_message([&] { Store::open(dir.db()); }), HasSubstr("jobs_spend_name"));
  Db db(dir.db(), std::chrono::seconds(1));
  EXPECT_EQ(schema_version(db), 3);
  EXPECT_EQ(index_names(dir.db()), before);  // no jobs_spend_sweep left half-made
  auto count = db.prepare("SELECT count(*) FROM jobs");
  ASSERT_TRUE(count.step());
  EXPECT_EQ(count.i64(0), 1);
}

TEST(StoreOpen, GarbageFileIsCalledCorruptInOneLine) {
  TempDir dir;
  {
    std::ofstream out(dir.db(), std::ios::binary);
    std::mt19937 rng(7);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>(rng()));
  }
  std::string msg = fatal_message([&] { Store::open(dir.db()); });
  EXPECT_EQ(msg, "store " + dir.db() +
                     " is not a nodus database or is corrupt: file is not a database; move it "
                     "away to start fresh");
}

TEST(StoreOpen, AnotherProgramsSqliteFileIsRefused) {
  TempDir dir;
  {
    Db db(dir.db(), std::chrono::seconds(1));
    db.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)");
  }
  std::string msg = fatal_message([&] { Store::open(dir.db()); });
  EXPECT_THAT(msg, HasSubstr("store " + dir.db() + " is not a nodus database"));
  EXPECT_THAT(msg, HasSubstr("move it away to start fresh"));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

// Runs fn as an unprivileged user when we are root (root ignores file modes), and returns the
// Fatal message it produced.
std::string message_as_unprivileged(const std::function<void()>& fn) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = testing::spawn([&] {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return false;
    std::string msg = fatal_message(fn);
    return ::write(fds[1], msg.data(), msg.size()) == static_cast<ssize_t>(msg.size());
  });
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, n);
  ::close(fds[0]);
  EXPECT_EQ(testing::wait_exit(pid), 0);
  return msg;
}

TEST(StoreOpen, UnwritableFolderIsPermissionDenied) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);  // reachable by the unprivileged child
  std::string ro = dir.path() + "/ro";
  ASSERT_EQ(::mkdir(ro.c_str(), 0555), 0);
  EXPECT_EQ(message_as_unprivileged([&] { Store::open(ro + "/nodus.db"); }),
            "cannot open store " + ro + "/nodus.db: Permission denied");
  EXPECT_EQ(
      message_as_unprivileged([&] { Store::open(ro + "/sub/nodus.db"); }),
      "cannot open store " + ro + "/sub/nodus.db: cannot create " + ro + "/sub: Permission denied");
}

TEST(StoreOpen, ReadOnlyFileIsPermissionDenied) {
  TempDir dir;
  Store::open(dir.db());
  ::chmod(dir.db().c_str(), 0444);
  // The folder is the unprivileged child's (a store folder others can write is refused), the
  // file is not writable by it.
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(dir.path().c_str(), 65534, 65534), 0);
  }
  EXPECT_EQ(message_as_unprivileged([&] { Store::open(dir.db()); }),
            "cannot open store " + dir.db() + ": Permission denied");
}

TEST(StoreOpen, WaitingTooLongForALockSaysSo) {
  TempDir dir;
  auto store = Store::open(dir.db(), std::chrono::milliseconds(300));
  Db other(dir.db(), std::chrono::seconds(1));
  Transaction hold(other, Transaction::Mode::kImmediate);
  auto start = std::chrono::steady_clock::now();
  std::string msg = fatal_message([&] { store->insert_job(testing::plain_job()); });
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(msg, "store " + dir.db() + " is locked by another process for more than 0.3 s");
  EXPECT_GE(waited, std::chrono::milliseconds(250));
}

// Issue 62: a process that holds the store's lock and is stopped (a supervisor a job sent
// SIGSTOP) holds it until continued. The wait still ends at the busy timeout, and the error
// names the holder and says it is stopped.
TEST(StoreOpen, ALockHeldByAStoppedProcessNamesIt) {
  TempDir dir;
  auto store = Store::open(dir.db(), std::chrono::milliseconds(300));
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Db other(dir.db(), std::chrono::seconds(1));
    Transaction hold(other, Transaction::Mode::kImmediate);
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  std::string msg = fatal_message([&] { store->insert_job(testing::plain_job()); });
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_NE(msg.find("is locked by another process for more than 0.3 s: held by pid " +
                     std::to_string(child) + " ("),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(", stopped: it holds the lock until continued"), std::string::npos) << msg;
}

TEST(StoreOpen, FoldersArePrivateAndUnsafeOnesAreRefused) {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Store::open(home + "/nodus.db");
  for (const std::string& sub : {home, home + "/logs", home + "/metrics"}) {
    struct stat st {};
    ASSERT_EQ(::stat(sub.c_str(), &st), 0) << sub;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << sub;
  }
  ::chmod(home.c_str(), 0757);
  EXPECT_THAT(fatal_message([&] { Store::open(home + "/nodus.db"); }),
              HasSubstr("others can write to it (mode 0757)"));
  ::chmod(home.c_str(), 0750);
  Store::open(home + "/nodus.db");
  struct stat st {};
  ::stat(home.c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "group access removed";
  ::rmdir((home + "/metrics").c_str());
  ASSERT_EQ(::symlink("/tmp", (home + "/metrics").c_str()), 0);
  // A link in place of one of nodus's own folders is refused whatever it points to.
  EXPECT_THAT(fatal_message([&] { Store::open(home + "/nodus.db"); }),
              HasSubstr("metrics': it is a symbolic link"));
}

TEST(StoreOpen, DefaultPathIsUnderNodusHome) {
  ::setenv("NODUS_HOME", "/some/where", 1);
  EXPECT_EQ(Store::default_path(), "/some/where/nodus.db");
  ::unsetenv("NODUS_HOME");
}

}  // namespace
}  // namespace nodus::store
