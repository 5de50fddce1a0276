// Issue 19's remaining cases on the real cluster, each as the issue found it: a huge output line
// (case 5), slurmrestd unreachable for more than 30 s (case 6), a TERM-ignoring job killed (case
// 8), and case 9's collisions and validations (two stores running "job 1" at once, a cap larger
// than a GPU-hour, a missing workdir, setsid and double-forked daemons). nodus runs as its own
// process here, measured with wait4() (its peak RSS and CPU time).

#ifdef NODUS_BIN

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;
using std::chrono::milliseconds;

struct Finished {
  int rc = -1;
  double seconds = 0;
  double cpu_s = 0;     // user + system time of nodus
  long max_rss_kb = 0;  // nodus's peak RSS
  std::string out, err;
  uintmax_t out_bytes = 0;
};

// nodus with its own store in `dir`, its stdout and stderr in files there.
class Nodus {
 public:
  Nodus(const JobDir& dir, std::string name = "a") : dir_(dir), name_(std::move(name)) {
    env_ = {{"NODUS_HOME", dir.path() + "/home-" + name_},
            {"NODUS_SLURM_URL", cluster().socket_url},
            {"NODUS_SLURM_WORKDIR", dir.path()},
            {"NODUS_BACKEND", "slurm"},
            {"NO_COLOR", "1"}};
  }
  pid_t start(const std::vector<std::string>& args) {
    started_ = std::chrono::steady_clock::now();
    pid_t pid = fork();
    if (pid == 0) {
      for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
      unsetenv("SLURM_JWT");
      if (chdir(dir_.path().c_str()) != 0) _exit(126);
      int o = open(out_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int n = open("/dev/null", O_RDONLY);
      dup2(n, 0);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<char*> argv = {const_cast<char*>(NODUS_BIN)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(NODUS_BIN, argv.data());
      _exit(127);
    }
    return pid;
  }
  Finished finish(pid_t pid) {
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    Finished f;
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    f.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    f.cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
              ru.ru_stime.tv_usec / 1e6;
    f.max_rss_kb = ru.ru_maxrss;
    // A huge output is checked by size, not read back.
    std::error_code ec;
    if (std::filesystem::file_size(out_path(), ec) < (16u << 20)) f.out = slurp(out_path());
    f.out_bytes = std::filesystem::file_size(out_path(), ec);
    f.err = slurp(err_path());
    return f;
  }
  Finished run(const std::vector<std::string>& args) { return finish(start(args)); }

 private:
  std::string out_path() const { return dir_.path() + "/cli-" + name_ + ".out"; }
  std::string err_path() const { return dir_.path() + "/cli-" + name_ + ".err"; }
  const JobDir& dir_;
  std::string name_;
  std::map<std::string, std::string> env_;
  std::chrono::steady_clock::time_point started_;
};

int count_lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// Case 5: a 200 MB line without a newline took 276 MB of nodus's RSS (local: 6.7 MB).
TEST(SlurmIssueCases, Case5HugeOutputLineKeepsNodusMemoryBounded) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r = nodus.run({"run", "--timeout", "60s", "--", "bash", "-c",
                      "head -c 200000000 /dev/zero | tr '\\0' x; echo; echo done"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out_bytes, 200'000'000u + 6) << "the line, a newline and \"done\" reach stdout";
  EXPECT_LT(r.max_rss_kb, 64 * 1024) << "nodus's peak RSS";
  EXPECT_LT(r.seconds, 60);
  std::printf("case 5: 200 MB line: nodus peak RSS %.1f MB, %.1f s\n", r.max_rss_kb / 1024.0,
              r.seconds);
}

// Case 6: slurmrestd unreachable for more than 30 s was a busy loop at 100% of a core writing 2.6 M
// error lines. Its socket is taken away for 35 s while nodus watches a job.
TEST(SlurmIssueCases, Case6RestdUnreachableCostsLittleCpuAndFewLines) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  pid_t pid = nodus.start({"run", "--timeout", "90s", "--", "sleep", "45"});
  std::string socket = cluster().socket_url.substr(std::string("unix://").size());
  std::this_thread::sleep_for(milliseconds(5000));  // submitted and running
  ASSERT_EQ(::rename(socket.c_str(), (socket + ".away").c_str()), 0);
  std::this_thread::sleep_for(std::chrono::seconds(35));
  ASSERT_EQ(::rename((socket + ".away").c_str(), socket.c_str()), 0);
  auto r = nodus.finish(pid);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_LT(r.cpu_s, 5.0) << "nodus's CPU time over a 45 s job with a 35 s outage";
  EXPECT_LT(count_lines(r.err), 20) << r.err;
  std::printf("case 6: 35 s outage: nodus CPU %.2f s, %d stderr lines\n", r.cpu_s,
              count_lines(r.err));
}

// Case 8: a TERM-ignoring job lived 4.65 s past nodus's kill (Slurm's KillWait), holding its
// GPUs. NOT fixed: nodus sends SIGKILL through the signal API, but slurmctld 22.05 turns a
// SIGKILL into a job kill (TERM, KillWait, KILL), so the job still ends KillWait (at least 5 s)
// after the kill. This bounds what holds today: ended, within KillWait + 3 s, nothing left.
TEST(SlurmIssueCases, Case8KillEndsATermIgnoringJobWithinKillWait) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  auto rest = cluster_client(settings);
  JobRecord job = new_job({"bash", "-c", "trap '' TERM; sleep 300"}, dir);
  job.timeout_ms = 120'000;
  ASSERT_TRUE(backend->submit(job, quiet()).ok());
  int64_t id = std::stoll(job.backend_id);
  ASSERT_TRUE(poll_until(
      *rest, id, [](const SlurmJob& j) { return phase_of(j.state) == Phase::kRunning; }, 30));
  std::this_thread::sleep_for(milliseconds(500));
  double t0 = unix_now();
  ASSERT_TRUE(backend->kill(job).ok());
  auto ended = poll_until(
      *rest, id, [](const SlurmJob& j) { return phase_of(j.state) == Phase::kFinal; }, 30);
  ASSERT_TRUE(ended);
  double gone = unix_now() - t0;
  EXPECT_LT(gone, 5.0 + 3.0) << "KillWait=5 on the dev cluster";
  std::printf("case 8: TERM-ignoring job final %.2f s after the kill (%s)\n", gone,
              ended->state.c_str());
}

// Case 9a: "nodus-<id>-<ms>" collided across stores: 7 of 18 concurrent runs printed another
// job's output. Six stores each run their job 1 at the same time.
TEST(SlurmIssueCases, Case9JobsOfDifferentStoresNeverShareOutput) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  std::vector<std::unique_ptr<Nodus>> stores;
  std::vector<pid_t> pids;
  for (int i = 0; i < 6; ++i) {
    stores.push_back(std::make_unique<Nodus>(dir, "s" + std::to_string(i)));
    pids.push_back(stores.back()->start(
        {"run", "--timeout", "60s", "--", "bash", "-c", "echo store-" + std::to_string(i)}));
  }
  for (int i = 0; i < 6; ++i) {
    auto r = stores[i]->finish(pids[i]);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, "store-" + std::to_string(i) + "\n") << "store " << i;
  }
}

// Case 9b: `--max-cost 3000000 --gpu L4` was cancelled at 0 ms; local runs it.
TEST(SlurmIssueCases, Case9AHugeCapRunsTheJob) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r = nodus.run({"run", "--gpu", "L4", "--max-cost", "3000000", "--", "echo", "ran"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n") << r.err;
}

// Case 9c: `-w /nonexistent` ran in /tmp and "completed".
TEST(SlurmIssueCases, Case9AMissingWorkdirExits126) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r = nodus.run({"run", "-w", "/nonexistent", "--", "pwd"});
  EXPECT_EQ(r.rc, 126) << r.out << r.err;
  EXPECT_EQ(("\n" + r.out).find("\n/tmp\n"), std::string::npos) << "pwd ran in /tmp: " << r.out;
  EXPECT_NE((r.out + r.err).find("/nonexistent"), std::string::npos) << r.out << r.err;
}

bool process_with_marker(const std::string& marker) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string cmdline = slurp(entry.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(marker) != std::string::npos && cmdline.find("bash -c") == std::string::npos)
      return true;
  }
  return false;
}

// Case 9d: a setsid daemon outlived the cancel (proctrack/linuxproc). The dev cluster runs
// proctrack/cgroup where the host has a writable cgroup v1 freezer.
TEST(SlurmIssueCases, Case9DaemonsDieWithTheCancelledJob) {
  REQUIRE_SLURM_CLUSTER();
  if (slurp(cluster().slurm_conf).find("ProctrackType=proctrack/cgroup") == std::string::npos)
    GTEST_SKIP() << "\n*** this host gives the dev cluster no cgroup v1 freezer: it runs "
                    "proctrack/linuxproc, which loses double-forked daemons (README) ***\n";
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  auto rest = cluster_client(settings);
  // Durations no other process on this machine uses, to find the daemons by.
  std::string setsid_marker = "sleep 4" + std::to_string(getpid() % 1000 + 1000);
  std::string daemon_marker = "sleep 5" + std::to_string(getpid() % 1000 + 1000);
  JobRecord job = new_job({"bash", "-c",
                           "setsid " + setsid_marker + " & ( setsid " + daemon_marker +
                               " & ); echo started; sleep 300"},
                          dir);
  job.timeout_ms = 120'000;
  ASSERT_TRUE(backend->submit(job, quiet()).ok());
  int64_t id = std::stoll(job.backend_id);
  ASSERT_TRUE(poll_until(
      *rest, id, [](const SlurmJob& j) { return phase_of(j.state) == Phase::kRunning; }, 30));
  bool both = false;
  for (int i = 0; i < 100 && !both; ++i) {
    both = process_with_marker(setsid_marker) && process_with_marker(daemon_marker);
    if (!both) std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(both) << "the job's daemons never started";
  ASSERT_TRUE(backend->kill(job).ok());
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !process_with_marker(setsid_marker) && !process_with_marker(daemon_marker);
    if (!gone) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(gone) << "a daemon of the cancelled job still runs";
}

}  // namespace
}  // namespace nodus::backend::slurm

#endif  // NODUS_BIN
