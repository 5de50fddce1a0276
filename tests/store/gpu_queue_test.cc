// The machine-wide queue of claims waiting for GPUs (store/gpu_queue.h): a claim made after a
// waiter leaves it the GPUs it needs, so a wide job is not passed over for good by narrow ones.
// flock conflicts between open files even within one process, so a waiter of this process
// stands in for another process's.

#include "store/gpu_queue.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "store/gpu_locks.h"
#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

using testing::TempDir;

std::vector<Gpu> inventory(const std::string& type, int n) {
  std::vector<Gpu> out;
  for (int i = 0; i < n; ++i)
    out.push_back({i, type, "NVIDIA " + type, "GPU-" + std::to_string(i)});
  return out;
}

int64_t self_start() { return process_start_time(::getpid()); }

// Served first come, first served at once (NODUS_GPU_QUEUE_AFTER=0), unless a test says.
class GpuQueue : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("NODUS_GPU_QUEUE_AFTER", "0", 1); }
  void TearDown() override { ::unsetenv("NODUS_GPU_QUEUE_AFTER"); }
};
using GpuQueueClaims = GpuQueue;

size_t waiter_files() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(gpu_lock_dir()))
    n += e.path().filename().string().rfind("wait-", 0) == 0;
  return n;
}

TEST_F(GpuQueue, NobodyWaitingLeavesNothing) { EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 0); }

TEST_F(GpuQueue, AClaimAfterAWaiterLeavesItWhatItNeeds) {
  GpuWaiter wide("H100", 4, "test");
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 4);
  EXPECT_EQ(gpus_to_leave("h100", 8, nullptr), 4) << "types compare as claims do";
  EXPECT_EQ(gpus_to_leave("L4", 8, nullptr), 0) << "another type is not held back";
  EXPECT_EQ(gpus_to_leave("H100", 3, nullptr), 0) << "4 of 3 GPUs: it could never be served";
  EXPECT_EQ(gpus_to_leave("H100", 8, &wide), 0) << "a waiter is not held back by itself";
  GpuWaiter later("H100", 1, "test");
  EXPECT_EQ(gpus_to_leave("H100", 8, &later), 4) << "a later waiter leaves the older its GPUs";
  EXPECT_EQ(gpus_to_leave("H100", 8, &wide), 0) << "an older waiter is not held back by a later";
}

TEST_F(GpuQueue, AWaiterIsPassedOverUntilItHasWaitedTheQueuesGrace) {
  ::unsetenv("NODUS_GPU_QUEUE_AFTER");  // 10 s
  GpuWaiter wide("H100", 4, "test");
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 0) << "held back for a wait of a moment";
  ::setenv("NODUS_GPU_QUEUE_AFTER", "1s", 1);
  usleep(1'100'000);
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 4);
  ::setenv("NODUS_GPU_QUEUE_AFTER", "soon", 1);
  EXPECT_THROW(gpus_to_leave("H100", 8, nullptr), Fatal);
}

TEST_F(GpuQueue, TheOldestWaiterCountsAndItsCountFollowsWhatItWants) {
  std::optional<GpuWaiter> first;
  first.emplace("H100", 2, "test");
  GpuWaiter second("H100", 6, "test");
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 2);
  first->want("H100", 3);
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 3);
  first.reset();  // it left: the next in line counts
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 6);
  EXPECT_EQ(waiter_files(), 1u);
}

TEST_F(GpuQueue, TheQueueSaysWhoWaitsForWhatSinceWhen) {
  const double before = static_cast<double>(std::time(nullptr)) - 1;
  GpuWaiter first("H100", 2, "job 5 of /x/nodus.db");
  GpuWaiter second("L4", 1, "sweep s2 of /y/nodus.db\nwith a newline");
  auto queue = gpu_queue();
  ASSERT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue[0].type, "H100");
  EXPECT_EQ(queue[0].count, 2);
  EXPECT_EQ(queue[0].who, "job 5 of /x/nodus.db");
  EXPECT_EQ(queue[0].pid, ::getpid());
  EXPECT_GE(queue[0].since, before);
  EXPECT_LE(queue[0].since, queue[1].since);
  EXPECT_EQ(queue[1].who, "sweep s2 of /y/nodus.db with a newline");
  auto l4 = first_in_line("l4", 4, nullptr);
  ASSERT_TRUE(l4);
  EXPECT_EQ(l4->who, "sweep s2 of /y/nodus.db with a newline");
  EXPECT_FALSE(first_in_line("L4", 4, &first)) << "the L4 waiter came after it";
}

TEST_F(GpuQueue, AWaiterWhoseProcessDiedIsSkippedAndRemoved) {
  // As a waiter killed with SIGKILL leaves it: its file, with nobody holding its lock.
  const std::string path = gpu_lock_dir() + "/wait-00000000000000000001-99999";
  std::ofstream(path) << "count 0000000004\ntype H100\n";
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(GpuQueue, UnreadableOrForeignFilesAreNotWaiters) {
  std::ofstream(gpu_lock_dir() + "/gpu0.lock") << "pid 1\njob 1\nstore /x\n";
  // Locked, but not what a waiter writes: held back for nobody.
  const std::string path = gpu_lock_dir() + "/wait-00000000000000000002-1";
  std::ofstream(path) << "count 4 and more\n";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  EXPECT_EQ(gpus_to_leave("H100", 8, nullptr), 0);
  ::close(fd);
}

TEST_F(GpuQueue, LeavingWakesAReleaseWatch) {
  std::optional<GpuWaiter> waiter;
  waiter.emplace("H100", 2, "test");
  GpuReleaseWatch watch;
  ASSERT_GE(watch.fd(), 0);
  watch.drain();
  waiter.reset();
  char buf[4096];
  EXPECT_GT(::read(watch.fd(), buf, sizeof buf), 0) << "no event when the waiter left";
}

TEST_F(GpuQueueClaims, AClaimLeavesAnOlderWaiterItsGpusAndTheWaiterClaimsThem) {
  TempDir dir;
  auto store = Store::open(dir.db());
  const auto inv = inventory("H100", 4);
  int64_t holder = store->insert_job(testing::plain_job(JobState::kWaiting));
  int64_t wide = store->insert_job(testing::plain_job(JobState::kWaiting));
  int64_t narrow = store->insert_job(testing::plain_job(JobState::kWaiting));
  ASSERT_TRUE(store->claim_gpus(holder, "H100", 2, inv, ::getpid(), self_start()));
  GpuWaiter queued("H100", 3, "test");  // the wide job: 3 of 4, with 2 free
  // Two free, three to leave: a 1-GPU claim after the waiter takes nothing.
  EXPECT_FALSE(store->claim_gpus(narrow, "H100", 1, inv, ::getpid(), self_start()));
  EXPECT_TRUE(store->job(narrow)->gpu_indices.empty());
  store->release_gpus(holder);
  // Four free: one may go to the narrow job, three stay for the waiter.
  auto got_narrow = store->claim_gpus(narrow, "H100", 1, inv, ::getpid(), self_start());
  ASSERT_TRUE(got_narrow);
  EXPECT_EQ(*got_narrow, (std::vector<int>{0}));
  auto got_wide = store->claim_gpus(wide, "H100", 3, inv, ::getpid(), self_start(), &queued);
  ASSERT_TRUE(got_wide);
  EXPECT_EQ(*got_wide, (std::vector<int>{1, 2, 3}));
}

TEST_F(GpuQueueClaims, AFailedClaimLeavesTheLockFilesAsTheyWere) {
  TempDir dir;
  auto store = Store::open(dir.db());
  const auto inv = inventory("H100", 2);
  int64_t job = store->insert_job(testing::plain_job(JobState::kWaiting));
  ASSERT_TRUE(store->claim_gpus(job, "H100", 2, inv, ::getpid(), self_start()));
  store->release_gpus(job);  // the lock files exist, as on a machine that ran a job before
  GpuWaiter queued("H100", 2, "test");
  GpuReleaseWatch watch;
  ASSERT_GE(watch.fd(), 0);
  watch.drain();
  EXPECT_FALSE(store->claim_gpus(job, "H100", 1, inv, ::getpid(), self_start()));
  char buf[4096];
  EXPECT_LT(::read(watch.fd(), buf, sizeof buf), 0)
      << "the GPUs locked for a moment to count them woke the watchers";
  EXPECT_TRUE(lock_gpu(0, 99, dir.db())) << "a GPU counted as free stayed locked";
}

}  // namespace
}  // namespace nodus::store
