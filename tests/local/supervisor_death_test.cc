// A job dies with its supervisor: SIGKILL of the supervisor process takes the job down.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "backend/local/local_backend.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

TEST(LocalSupervisorDeath, SigkillOfTheSupervisorKillsTheJob) {
  TempDir dir;
  const std::string pid_file = dir.file("job.pid");
  pid_t supervisor = ::fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    // The stand-in supervisor: its main thread forks the job, then waits to be killed.
    auto backend = make_local_backend();
    JobRecord job = shell_job("echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " +
                              pid_file + "; exec sleep 60");
    LaunchSpec spec;
    spec.attach = false;
    if (!backend->submit(job, spec).ok()) ::_exit(1);
    for (;;) ::pause();
  }
  ASSERT_TRUE(eventually([&] { return !read_pids(pid_file).empty(); }, 30s));
  const pid_t job_pid = read_pids(pid_file).at(0);
  ASSERT_FALSE(gone(job_pid));

  ASSERT_EQ(::kill(supervisor, SIGKILL), 0);
  ASSERT_EQ(::waitpid(supervisor, nullptr, 0), supervisor);
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually([&] { return gone(job_pid); }, 2s))
      << "job pid " << job_pid << " still runs 2 s after its supervisor was killed";
  std::cout << "[ measure  ] job gone "
            << std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::steady_clock::now() - killed)
                   .count()
            << " us after the supervisor's SIGKILL\n";
  if (!gone(job_pid)) ::kill(job_pid, SIGKILL);
}

}  // namespace
}  // namespace nodus::backend::local
