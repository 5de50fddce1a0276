// GPU claims across real processes on a real file, and reconciliation of dead supervisors.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "store/gpu_locks.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;

std::vector<Gpu> inventory(const std::string& type, int n, int first = 0) {
  std::vector<Gpu> out;
  for (int i = 0; i < n; ++i)
    out.push_back({first + i, type, "NVIDIA " + type, "GPU-" + std::to_string(first + i)});
  return out;
}

int64_t self_start() { return process_start_time(::getpid()); }

int64_t claim_rows(const std::string& path) {
  Db db(path, std::chrono::seconds(1));
  auto stmt = db.prepare("SELECT count(*) FROM gpu_claims");
  return stmt.step() ? stmt.i64(0) : -1;
}

TEST(StoreClaims, TakesTheLowestFreeIndicesOfTheType) {
  TempDir dir;
  auto store = Store::open(dir.db());
  auto inv = inventory("L4", 2);
  auto h100 = inventory("H100", 4, 2);                // indices 2..5
  inv.insert(inv.end(), h100.rbegin(), h100.rend());  // order in the inventory does not matter
  int64_t a = store->insert_job(testing::plain_job(JobState::kWaiting));
  int64_t b = store->insert_job(testing::plain_job(JobState::kWaiting));

  auto got_a = store->claim_gpus(a, "H100", 3, inv, ::getpid(), self_start());
  ASSERT_TRUE(got_a);
  EXPECT_EQ(*got_a, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(store->job(a)->gpu_indices, (std::vector<int>{2, 3, 4}));

  EXPECT_FALSE(store->claim_gpus(b, "H100", 2, inv, ::getpid(), self_start()));
  EXPECT_TRUE(store->job(b)->gpu_indices.empty());
  auto got_b = store->claim_gpus(b, "L4", 2, inv, ::getpid(), self_start());
  ASSERT_TRUE(got_b);
  EXPECT_EQ(*got_b, (std::vector<int>{0, 1}));
  EXPECT_EQ(store->claimed_gpus(), (std::vector<int>{0, 1, 2, 3, 4}));

  store->release_gpus(a);
  EXPECT_EQ(store->claimed_gpus(), (std::vector<int>{0, 1}));
  EXPECT_EQ(*store->claim_gpus(b, "H100", 4, inv, ::getpid(), self_start()),
            (std::vector<int>{2, 3, 4, 5}));
}

TEST(StoreClaims, ClaimForAnUnknownJobLeavesNoClaim) {
  TempDir dir;
  auto store = Store::open(dir.db());
  EXPECT_THROW(store->claim_gpus(777, "L4", 1, inventory("L4", 2), ::getpid(), self_start()),
               Fatal);
  EXPECT_TRUE(store->claimed_gpus().empty());
}

TEST(StoreClaims, ClaimsOfADeadOwnerAreReclaimed) {
  TempDir dir;
  auto inv = inventory("A100", 2);
  int64_t job = Store::open(dir.db())->insert_job(testing::plain_job(JobState::kRunning));
  pid_t child = testing::spawn([&] {
    auto store = Store::open(dir.db());
    auto got = store->claim_gpus(job, "A100", 2, inv, ::getpid(), process_start_time(::getpid()));
    return got && got->size() == 2;  // exits holding both GPUs, never releasing them
  });
  ASSERT_EQ(testing::wait_exit(child), 0);

  auto store = Store::open(dir.db());
  EXPECT_TRUE(store->claimed_gpus().empty());  // dead owners do not count
  int64_t mine = store->insert_job(testing::plain_job(JobState::kWaiting));
  auto got = store->claim_gpus(mine, "A100", 2, inv, ::getpid(), self_start());
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, (std::vector<int>{0, 1}));
}

TEST(StoreClaims, AZombieOwnerIsDead) {
  TempDir dir;
  auto inv = inventory("L4", 1);
  int64_t job = Store::open(dir.db())->insert_job(testing::plain_job(JobState::kRunning));
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = testing::spawn([&] {
    auto got = Store::open(dir.db())->claim_gpus(job, "L4", 1, inv, ::getpid(),
                                                 process_start_time(::getpid()));
    return got && ::write(ready[1], "x", 1) == 1;
  });
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  // The child is exiting but not yet reaped: once it is a zombie its claim is free.
  auto store = Store::open(dir.db());
  int64_t mine = store->insert_job(testing::plain_job(JobState::kWaiting));
  std::optional<std::vector<int>> got;
  for (int i = 0; i < 500 && !got; ++i) {
    got = store->claim_gpus(mine, "L4", 1, inv, ::getpid(), self_start());
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(got);
  EXPECT_EQ(testing::wait_exit(child), 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

// 4 processes x 50 claim/release cycles of 1 or 2 GPUs on a 2-GPU inventory, each process on
// the store store_of(p). Each holder appends "+ <gpu> <pid>" to a shared log after its claim
// commits and "- <gpu> <pid>" before it releases; O_APPEND writes are ordered, so a GPU claimed
// twice at once shows as a second "+" before the "-" of the first.
void expect_never_shared(const TempDir& dir, const std::function<std::string(int)>& store_of) {
  const auto inv = inventory("H100", 2);
  const std::string log_path = dir.path() + "/claims.log";
  constexpr int kProcs = 4, kCycles = 50;
  for (int p = 0; p < kProcs; ++p) Store::open(store_of(p));

  std::vector<pid_t> children;
  for (int p = 0; p < kProcs; ++p) {
    children.push_back(testing::spawn([&, p] {
      int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      auto note = [&](char op, int gpu) {
        std::string line = std::string(1, op) + " " + std::to_string(gpu) + " " +
                           std::to_string(::getpid()) + "\n";
        return ::write(log, line.data(), line.size()) == static_cast<ssize_t>(line.size());
      };
      auto store = Store::open(store_of(p));
      int64_t job = store->insert_job(testing::plain_job(JobState::kWaiting));
      const int64_t start = process_start_time(::getpid());
      for (int done = 0; done < kCycles;) {
        int want = 1 + (done + p) % 2;
        auto got = store->claim_gpus(job, "H100", want, inv, ::getpid(), start);
        if (!got) {
          ::usleep(200);
          continue;
        }
        if (static_cast<int>(got->size()) != want) return false;
        for (int g : *got)
          if (!note('+', g)) return false;
        ::usleep(300);  // hold it a moment, so overlaps would have time to happen
        for (int g : *got)
          if (!note('-', g)) return false;
        store->release_gpus(job);
        ++done;
      }
      return true;
    }));
  }
  for (pid_t c : children) EXPECT_EQ(testing::wait_exit(c), 0);

  std::ifstream in(log_path);
  std::map<int, std::string> holder;  // gpu -> pid holding it, per the log
  int claims = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    char op;
    int gpu;
    std::string pid;
    ASSERT_TRUE(fields >> op >> gpu >> pid) << line;
    if (op == '+') {
      ASSERT_EQ(holder.count(gpu), 0u)
          << "GPU " << gpu << " claimed by " << pid << " while held by " << holder[gpu];
      holder[gpu] = pid;
      ++claims;
    } else {
      ASSERT_EQ(holder[gpu], pid) << line;
      holder.erase(gpu);
    }
  }
  EXPECT_EQ(claims, kProcs * kCycles * 3 / 2);  // half the cycles take 1 GPU, half take 2
  for (int p = 0; p < kProcs; ++p) EXPECT_TRUE(Store::open(store_of(p))->claimed_gpus().empty());
}

TEST(StoreClaims, ConcurrentProcessesNeverShareAGpu) {
  TempDir dir;
  expect_never_shared(dir, [&](int) { return dir.db(); });
}

// Two users, or two shells with different NODUS_HOME: each store is its own file, and the GPUs
// are the machine's (store/gpu_locks.h).
TEST(StoreClaims, ProcessesOfDifferentStoresNeverShareAGpu) {
  TempDir dir;
  expect_never_shared(dir,
                      [&](int p) { return dir.path() + "/store" + std::to_string(p) + ".db"; });
}

TEST(StoreClaims, AGpuHeldByAnotherStoreNamesItsHolder) {
  TempDir dir;
  const auto inv = inventory("L4", 1);
  auto a = Store::open(dir.path() + "/a.db");
  auto b = Store::open(dir.path() + "/b.db");
  int64_t ja = a->insert_job(testing::plain_job(JobState::kWaiting));
  int64_t jb = b->insert_job(testing::plain_job(JobState::kWaiting));
  ASSERT_TRUE(a->claim_gpus(ja, "L4", 1, inv, ::getpid(), self_start()));
  EXPECT_FALSE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
  auto holder = gpu_holder(0);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->job_id, ja);
  EXPECT_EQ(holder->store, a->path());
  EXPECT_EQ(holder->pid, ::getpid());
  a->release_gpus(ja);
  EXPECT_FALSE(gpu_holder(0));
  EXPECT_TRUE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
  EXPECT_TRUE(locked_gpus(jb, b->path()) == std::vector<int>{0});
  b->release_gpus(jb);
}

// The kernel drops a dead holder's lock, however it died: no cleanup, no stale GPU.
TEST(StoreClaims, AHolderKilledWithSigkillFreesItsGpuForOtherStores) {
  TempDir dir;
  const auto inv = inventory("L4", 1);
  int held[2];
  ASSERT_EQ(::pipe(held), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto a = Store::open(dir.path() + "/a.db");
    int64_t j = a->insert_job(testing::plain_job(JobState::kWaiting));
    bool ok =
        a->claim_gpus(j, "L4", 1, inv, ::getpid(), process_start_time(::getpid())).has_value();
    if (::write(held[1], ok ? "y" : "n", 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(held[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto b = Store::open(dir.path() + "/b.db");
  int64_t jb = b->insert_job(testing::plain_job(JobState::kWaiting));
  EXPECT_FALSE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
  b->release_gpus(jb);
  ::close(held[0]);
  ::close(held[1]);
}

// A holder whose lock file was removed (rm, a tmp cleaner) still holds its GPU by its claim's
// abstract socket, which the kernel frees only when the holder dies, kill -9 included. A process
// the holder started (a job) inherits nothing that keeps the claim after the holder is gone.
TEST(StoreClaims, AHolderWhoseLockFileWasRemovedKeepsItsGpuUntilKilledWithSigkill) {
  TempDir dir;
  const auto inv = inventory("L4", 1);
  int held[2];
  ASSERT_EQ(::pipe(held), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto a = Store::open(dir.path() + "/a.db");
    int64_t j = a->insert_job(testing::plain_job(JobState::kWaiting));
    bool ok =
        a->claim_gpus(j, "L4", 1, inv, ::getpid(), process_start_time(::getpid())).has_value();
    pid_t job = ::fork();  // the job: what it inherits across exec
    if (job == 0) {
      ::execlp("sleep", "sleep", "30", nullptr);
      ::_exit(127);
    }
    if (::write(held[1], ok ? "y" : "n", 1) != 1 || ::write(held[1], &job, sizeof job) < 0)
      ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  pid_t job = -1;
  struct Reap {  // on every way out, a failed ASSERT's included: nothing left running
    const pid_t& pid;
    ~Reap() {
      if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
    }
  } reap_holder{child}, reap_job{job};
  ASSERT_EQ(::read(held[0], &c, 1), 1);
  ASSERT_EQ(::read(held[0], &job, sizeof job), static_cast<ssize_t>(sizeof job));
  ASSERT_EQ(c, 'y');
  const std::string lock_file = gpu_lock_dir() + "/gpu0.lock";
  ASSERT_TRUE(std::filesystem::remove(lock_file));
  auto holder = gpu_holder(0);
  ASSERT_TRUE(holder) << "a GPU whose lock file was removed looked free";
  EXPECT_TRUE(holder->lock_file_removed);
  auto b = Store::open(dir.path() + "/b.db");
  int64_t jb = b->insert_job(testing::plain_job(JobState::kWaiting));
  EXPECT_FALSE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
  EXPECT_TRUE(std::filesystem::exists(lock_file)) << "the failed claim made a file to lock";
  std::filesystem::remove_all(gpu_lock_dir());
  EXPECT_FALSE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()))
      << "a claim in a lock folder made anew was given a held GPU";
  EXPECT_TRUE(gpu_holder(0));

  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  child = -1;
  EXPECT_FALSE(gpu_holder(0)) << "the job the holder started kept its claim";
  EXPECT_TRUE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
  b->release_gpus(jb);
  ::close(held[0]);
  ::close(held[1]);
}

// A waiter sleeps on a GpuReleaseWatch of the lock folder: a release must wake it even when the
// holder's lock file, or the whole folder, was removed and made anew meanwhile.
TEST(StoreClaims, AReleaseWakesAWatchAfterItsLockFileOrFolderWasRemoved) {
  TempDir dir;
  auto a = Store::open(dir.path() + "/a.db");
  auto b = Store::open(dir.path() + "/b.db");
  const auto inv = inventory("L4", 1);
  int64_t ja = a->insert_job(testing::plain_job(JobState::kWaiting));
  int64_t jb = b->insert_job(testing::plain_job(JobState::kWaiting));
  for (bool whole_folder : {false, true}) {
    SCOPED_TRACE(whole_folder ? "the folder removed" : "the file removed");
    ASSERT_TRUE(a->claim_gpus(ja, "L4", 1, inv, ::getpid(), self_start()));
    GpuReleaseWatch watch;
    ASSERT_GE(watch.fd(), 0);
    auto woken = [&watch](int ms) {
      pollfd p{watch.fd(), POLLIN, 0};
      return ::poll(&p, 1, ms) > 0;
    };
    if (whole_folder)
      std::filesystem::remove_all(gpu_lock_dir());
    else
      std::filesystem::remove(gpu_lock_dir() + "/gpu0.lock");
    watch.drain();  // a removed folder is watched anew from here
    EXPECT_FALSE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
    woken(0);
    watch.drain();
    a->release_gpus(ja);
    EXPECT_TRUE(woken(10'000)) << "the release woke nobody";
    EXPECT_FALSE(gpu_holder(0));  // by the time of the wake
    ASSERT_TRUE(b->claim_gpus(jb, "L4", 1, inv, ::getpid(), self_start()));
    b->release_gpus(jb);
  }
}

TEST(StoreReconcile, DeadSupervisorsJobsBecomeLostAndBilledAndFreeTheirGpus) {
  TempDir dir;
  auto inv = inventory("H100", 4);
  auto store = Store::open(dir.db());
  const double hour_ago = unix_now() - 3600;

  // A supervisor that claims two GPUs for its job and dies.
  JobRecord orphan = testing::plain_job(JobState::kRunning);
  orphan.gpu_type = "H100";
  orphan.gpu_count = 2;
  orphan.rate_per_gpu_hour = 2.6;
  orphan.started_at = hour_ago;
  orphan.note = "earlier note";
  orphan.id = store->insert_job(orphan);
  pid_t child = testing::spawn([&] {
    auto s = Store::open(dir.db());
    int64_t start = process_start_time(::getpid());
    JobRecord j = *s->job(orphan.id);
    j.supervisor_pid = ::getpid();
    j.supervisor_start = start;
    s->update_job(j);
    return s->claim_gpus(j.id, "H100", 2, inv, ::getpid(), start).has_value();
  });
  ASSERT_EQ(testing::wait_exit(child), 0);

  JobRecord never_started = testing::plain_job(JobState::kWaiting);
  never_started.supervisor_pid = child;  // dead too
  never_started.id = store->insert_job(never_started);

  JobRecord alive = testing::plain_job(JobState::kRunning);
  alive.supervisor_pid = ::getpid();
  alive.supervisor_start = self_start();
  alive.started_at = hour_ago;
  alive.id = store->insert_job(alive);

  JobRecord slurm = testing::plain_job(JobState::kRunning);
  slurm.backend = "slurm";
  slurm.supervisor_pid = child;
  slurm.id = store->insert_job(slurm);

  int64_t finished = store->insert_job(testing::plain_job(JobState::kCompleted));

  EXPECT_EQ(claim_rows(dir.db()), 2);
  const double before = unix_now();
  auto changed = store->reconcile_dead_supervisors();
  EXPECT_EQ(changed, (std::vector<int64_t>{orphan.id, never_started.id}));

  JobRecord lost = *store->job(orphan.id);
  EXPECT_EQ(lost.state, JobState::kLost);
  ASSERT_TRUE(lost.ended_at);
  EXPECT_GE(*lost.ended_at, before);
  EXPECT_NEAR(lost.cost, 2 * 2.6 * (*lost.ended_at - hour_ago) / 3600, 1e-9);
  EXPECT_NEAR(lost.cost, 5.2, 0.01);
  EXPECT_EQ(lost.note, "earlier note; supervisor died; billed up to the time it was found dead");
  EXPECT_EQ(lost.gpu_indices, (std::vector<int>{0, 1}));  // history keeps where it ran

  JobRecord lost_waiting = *store->job(never_started.id);
  EXPECT_EQ(lost_waiting.state, JobState::kLost);
  EXPECT_EQ(lost_waiting.cost, 0);

  EXPECT_EQ(store->job(alive.id)->state, JobState::kRunning);
  EXPECT_EQ(store->job(slurm.id)->state, JobState::kRunning);
  EXPECT_EQ(store->job(finished)->state, JobState::kCompleted);
  EXPECT_EQ(claim_rows(dir.db()), 0);                        // deleted, not merely ignored
  EXPECT_TRUE(store->reconcile_dead_supervisors().empty());  // nothing left to do
}

// A sweep waiting for GPUs sleeps on a GpuReleaseWatch: a claim that fails must not wake it (it
// would wake itself at every look, for as long as it waits); a release, and a claim, must.
TEST(StoreClaims, AFailedClaimLeavesTheLockFilesAloneAndAReleaseWakesAWatch) {
  TempDir dir;
  auto store = Store::open(dir.db());
  auto inv = inventory("H100", 2);
  int64_t a = store->insert_job(testing::plain_job(JobState::kWaiting));
  int64_t b = store->insert_job(testing::plain_job(JobState::kWaiting));
  ASSERT_TRUE(store->claim_gpus(b, "H100", 2, inv, ::getpid(), self_start()));  // the files made
  store->release_gpus(b);
  ASSERT_TRUE(store->claim_gpus(a, "H100", 1, inv, ::getpid(), self_start()));  // GPU 0
  GpuReleaseWatch watch;
  ASSERT_GE(watch.fd(), 0);
  auto woken = [&watch](int ms) {
    pollfd p{watch.fd(), POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  };
  // Two wanted, one free: GPU 1 is locked, then let go, and its file never written.
  EXPECT_FALSE(store->claim_gpus(b, "H100", 2, inv, ::getpid(), self_start()));
  EXPECT_FALSE(woken(0));
  EXPECT_TRUE(locked_gpus(b, store->path()).empty());
  EXPECT_FALSE(gpu_holder(1));
  store->release_gpus(a);
  EXPECT_TRUE(woken(10'000));
  EXPECT_FALSE(gpu_holder(0));  // by the time of the wake
  watch.drain();
  EXPECT_FALSE(woken(0));
  auto got = store->claim_gpus(b, "H100", 2, inv, ::getpid(), self_start());
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, (std::vector<int>{0, 1}));
  EXPECT_TRUE(woken(10'000));
  store->release_gpus(b);
  EXPECT_EQ(claim_rows(dir.db()), 0);
}

}  // namespace
}  // namespace nodus::store
