// The machine's GPU queue (store/gpu_queue.h) against a waiter that dies without leaving it:
// `kill -9` of a `nodus run` that waits for GPUs leaves its file in the lock folder, and that
// file must hold nothing back. Before the kill the same claim is held back, so the test cannot
// pass for a queue that holds back nothing.

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

size_t waiter_files() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::getenv("NODUS_GPU_LOCKS")))
    n += e.path().filename().string().rfind("wait-", 0) == 0;
  return n;
}

TEST(GpuQueueHostile, AWaiterKilledWithSigkillHoldsNothingBack) {
  NodusHome home;
  const std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "H100:2"},
                                               {"NODUS_GPU_QUEUE_AFTER", "0"}};
  const std::string go = home.file("go");
  auto holder = home.run({"run", "-d", "--gpu", "H100", "--", "sh", "-c",
                          "while [ ! -e " + go + " ]; do sleep 0.05; done"},
                         env);
  ASSERT_EQ(holder.code, 0) << holder.err;
  const std::string holder_id = holder.out.substr(0, holder.out.find('\n'));
  // Needs both GPUs, one is held: it waits, in line.
  pid_t waiter = home.start({"run", "--gpu", "H100:2", "--", "true"}, env);
  for (int i = 0; i < 400 && waiter_files() == 0; ++i) std::this_thread::sleep_for(25ms);
  ASSERT_EQ(waiter_files(), 1u) << "the waiting run never joined the queue";
  auto held_back = home.run({"run", "--gpu", "H100", "--no-wait", "--", "true"}, env);
  EXPECT_EQ(held_back.code, 125) << "the free GPU went past the waiter: " << held_back.err;

  ASSERT_EQ(::kill(waiter, SIGKILL), 0);
  wait_exit(waiter, 10s);
  EXPECT_EQ(waiter_files(), 1u) << "a process killed with SIGKILL cannot remove its file";
  auto after = home.run({"run", "--gpu", "H100", "--no-wait", "--", "true"}, env);
  EXPECT_EQ(after.code, 0) << "a dead waiter held the free GPU back: " << after.err;
  EXPECT_EQ(waiter_files(), 0u) << "the dead waiter's file was left";

  write_file(go, "");
  EXPECT_EQ(home.run({"wait", holder_id}, env).code, 0);
}

}  // namespace
}  // namespace nodus::testing
