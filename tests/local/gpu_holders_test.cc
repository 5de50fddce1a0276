// The leftover-GPU-process check, with a stand-in file for /dev/nvidia*.

#include "backend/local/gpu_holders.h"

#include <gtest/gtest.h>

#include "backend/local/local_backend.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

TEST(GpuHolders, KillsTheTreesProcessesThatHoldTheDeviceAndNamesThem) {
  TempDir dir;
  write_text(dir.file("nvidia0"), "");
  auto backend = make_local_backend();
  // Like a DataLoader worker: a child keeps the device open after the main process exits.
  // Another child runs without it and must be left for kill().
  JobRecord job = shell_job(
      "sh -c 'exec 7<" + dir.file("nvidia0") + "; echo $$ > " + dir.file("holder") + ".tmp; mv " +
      dir.file("holder") + ".tmp " + dir.file("holder") +
      "; exec sleep 1000' &"
      " sleep 1000 & echo $! > " +
      dir.file("other") + "; while [ ! -s " + dir.file("holder") + " ]; do sleep 0.01; done");
  LaunchSpec spec;
  spec.attach = false;
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_EQ(wait_exit(*backend, job, 30s).outcome.exit_code, 0);
  const pid_t holder = read_pids(dir.file("holder")).at(0);
  const pid_t other = read_pids(dir.file("other")).at(0);
  const pid_t main_pid = std::stol(job.backend_id);
  // The holder wrote its pid just before exec'ing sleep.
  ASSERT_TRUE(eventually(
      [&] {
        auto st = read_proc_stat(holder);
        return st && st->comm == "sleep";
      },
      30s));

  std::string line = kill_gpu_holders(main_pid, dir.file("nvidia"));
  EXPECT_EQ(line, "killed 1 leftover process holding " + dir.file("nvidia") +
                      "*: " + std::to_string(holder) + " (sleep)");
  EXPECT_TRUE(gone(holder));
  EXPECT_FALSE(gone(other));
  EXPECT_EQ(kill_gpu_holders(main_pid, dir.file("nvidia")),
            "no process of the job holds " + dir.file("nvidia") + "*");
  ASSERT_TRUE(backend->kill(job).ok());
  EXPECT_TRUE(gone(other));
}

TEST(GpuHolders, AProcessOutsideTheTreeIsNotTouched) {
  TempDir dir;
  write_text(dir.file("nvidia0"), "");
  // Held by a process of no job: a setsid grandchild of this process, whose parent stays.
  pid_t outsider_parent = ::fork();
  ASSERT_GE(outsider_parent, 0);
  if (outsider_parent == 0) {
    const std::string script = "setsid sh -c 'exec 7<" + dir.file("nvidia0") + "; echo $$ > " +
                               dir.file("outsider") + ".tmp; mv " + dir.file("outsider") + ".tmp " +
                               dir.file("outsider") + "; exec sleep 1000' & wait";
    ::execl("/bin/sh", "sh", "-c", script.c_str(), nullptr);
    ::_exit(127);
  }
  ASSERT_TRUE(eventually([&] { return !read_pids(dir.file("outsider")).empty(); }, 30s));
  const pid_t outsider = read_pids(dir.file("outsider")).at(0);
  auto backend = make_local_backend();
  JobRecord job = shell_job("exec sleep 1000");
  LaunchSpec spec;
  spec.attach = false;
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_EQ(kill_gpu_holders(std::stol(job.backend_id), dir.file("nvidia")),
            "no process of the job holds " + dir.file("nvidia") + "*");
  EXPECT_FALSE(gone(outsider));
  ASSERT_TRUE(backend->kill(job).ok());
  ::kill(outsider, SIGKILL);
  ::kill(outsider_parent, SIGKILL);
  ::waitpid(outsider_parent, nullptr, 0);
}

TEST(GpuHolders, KillNotesLeftoverHoldersOfAGpuJob) {
  TempDir dir;
  write_text(dir.file("nvidia0"), "");
  auto backend = make_local_backend();
  JobRecord job = shell_job("echo hi");
  job.gpu_count = 1;
  job.gpu_indices = {0};
  ASSERT_TRUE(backend->submit(job, {}).ok());
  wait_exit(*backend, job, 30s);
  ASSERT_TRUE(backend->kill(job).ok());
  // Nothing held the real /dev/nvidia*: the note says so.
  // (after the containment note every local job's record starts with)
  EXPECT_NE(job.note.find("; no process of the job holds /dev/nvidia*"), std::string::npos)
      << job.note;
}

}  // namespace
}  // namespace nodus::backend::local
