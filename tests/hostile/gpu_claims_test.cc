// A GPU claim against the job that holds it deleting the machine's lock files (store/gpu_locks.h):
// `rm -f $NODUS_GPU_LOCKS/gpu*.lock`, or a tmp cleaner removing the whole folder. A flock on a
// deleted file excludes nobody who opens a new file of that name, so before the claim's abstract
// socket a second store was given the GPU the first job still ran on. Each case first checks that
// the job did remove what it meant to, so the test cannot pass for a removal that never happened.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

bool appears(const std::string& path, std::chrono::milliseconds limit) {
  const double until = now_seconds() + std::chrono::duration<double>(limit).count();
  while (!std::filesystem::exists(path) && now_seconds() < until) std::this_thread::sleep_for(25ms);
  return std::filesystem::exists(path);
}

// Waits until job `id` of `home` is in `state` (show's json), for up to 30 s.
bool job_reaches(const NodusHome& home, const std::string& id, const std::string& state) {
  const double until = now_seconds() + 30;
  while (now_seconds() < until) {
    auto r = home.run({"show", id, "--format", "json"});
    if (r.code == 0 && nlohmann::json::parse(r.out, nullptr, false).value("state", "") == state)
      return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// Job 1 of store A holds the one declared H100 and runs `remove` (a shell command); store B must
// be refused it, and wait for it, until job 1 ends, and then get it.
void expect_held_until_the_holder_ends(const std::string& remove, const std::string& gone) {
  NodusHome a, b;
  const std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "H100:1"}};
  const std::string go = a.file("go"), removed = a.file("removed"), ran = b.file("ran");
  auto holder = a.run(
      {"run", "-d", "--gpu", "H100", "--", "sh", "-c",
       remove + " && touch " + removed + " && while [ ! -e " + go + " ]; do sleep 0.05; done"},
      env);
  ASSERT_EQ(holder.code, 0) << holder.err;
  const std::string holder_id = holder.out.substr(0, holder.out.find('\n'));
  struct Finish {  // on every way out, a failed ASSERT's included: job 1 ends
    const NodusHome& home;
    const std::string& go;
    ~Finish() {
      if (std::filesystem::exists(home.path())) write_file(go, "");
    }
  } finish{a, go};
  ASSERT_TRUE(appears(removed, 30s)) << "the job never removed " << gone;
  ASSERT_FALSE(std::filesystem::exists(gone)) << "nothing left to test: " << gone << " is there";

  auto refused = b.run({"run", "--gpu", "H100", "--no-wait", "--", "touch", ran}, env);
  EXPECT_EQ(refused.code, 125) << "store B was given the GPU store A's job runs on: "
                               << refused.err;
  EXPECT_NE(refused.err.find("GPU 0 is held (its lock file was removed)"), std::string::npos)
      << refused.err;
  auto gpus = b.run({"gpus", "--format", "json"}, env);
  ASSERT_EQ(gpus.code, 0) << gpus.err;
  auto rows = nlohmann::json::parse(gpus.out, nullptr, false);
  ASSERT_TRUE(rows.is_array() && !rows.empty()) << gpus.out;
  EXPECT_EQ(rows[0]["other_store"]["lock_file_removed"], true) << gpus.out;

  // Waits, and runs once job 1 ends.
  const pid_t waiting = b.start({"run", "--gpu", "H100", "--", "touch", ran}, env);
  ASSERT_TRUE(job_reaches(b, "2", "waiting"));
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(std::filesystem::exists(ran)) << "store B's job ran beside store A's";
  write_file(go, "");
  EXPECT_EQ(a.run({"wait", holder_id}, env).code, 0);
  EXPECT_EQ(wait_exit(waiting, 30s), 0) << "store B's job never got the GPU job 1 freed";
  EXPECT_TRUE(std::filesystem::exists(ran));
}

TEST(GpuClaimsHostile, AJobThatDeletesItsLockFilesKeepsItsGpuFromOtherStores) {
  const std::string dir = std::getenv("NODUS_GPU_LOCKS");
  expect_held_until_the_holder_ends("rm -f " + dir + "/gpu*.lock", dir + "/gpu0.lock");
}

TEST(GpuClaimsHostile, AJobThatDeletesTheLockFolderKeepsItsGpuFromOtherStores) {
  const std::string dir = std::getenv("NODUS_GPU_LOCKS");
  expect_held_until_the_holder_ends("rm -rf " + dir, dir);
}

}  // namespace
}  // namespace nodus::testing
