#include "telemetry/host_sampler.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

extern char** environ;

namespace nodus::telemetry {
namespace {

struct FakeProc {
  pid_t ppid = 1, pgrp = 0, session = 0;
  uint64_t utime = 0, stime = 0, starttime = 1;
  int64_t rss = 0;
  char state = 'S';
};

// Processes as a test sets them; the sampler reads them through the ProcReader interface.
struct FakeWorld {
  std::map<pid_t, FakeProc> procs;
  int cores = 16;
  pid_t self_pid = 100, self_session = 100, self_pgrp = 100;
  // cgroup folder by pid (absent: no cgroup known), and the members of each folder.
  std::map<pid_t, std::string> cgroup_of;
  std::map<std::string, std::vector<pid_t>> cgroups;
  int stat_reads = 0;  // how many /proc/PID/stat the sampler read
};

class FakeReader : public ProcReader {
 public:
  explicit FakeReader(FakeWorld* w) : w_(w) {}
  std::vector<pid_t> pids() override {
    std::vector<pid_t> out;
    for (const auto& [pid, p] : w_->procs) out.push_back(pid);
    return out;
  }
  std::vector<pid_t> children(pid_t pid) override {
    std::vector<pid_t> out;
    for (const auto& [child, p] : w_->procs)
      if (p.ppid == pid) out.push_back(child);
    return out;
  }
  std::optional<std::string> cgroup_dir(pid_t pid) override {
    auto it = w_->cgroup_of.find(pid == 0 ? w_->self_pid : pid);
    if (it == w_->cgroup_of.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::vector<pid_t>> cgroup_procs(const std::string& dir) override {
    auto it = w_->cgroups.find(dir);
    if (it == w_->cgroups.end()) return std::nullopt;
    return it->second;
  }
  pid_t self_pid() override { return w_->self_pid; }
  std::optional<std::string> stat(pid_t pid) override {
    ++w_->stat_reads;
    auto it = w_->procs.find(pid);
    if (it == w_->procs.end()) return std::nullopt;
    const FakeProc& p = it->second;
    return std::to_string(pid) + " (proc " + std::to_string(pid) + ") " + p.state + " " +
           std::to_string(p.ppid) + " " + std::to_string(p.pgrp) + " " + std::to_string(p.session) +
           " 0 -1 0 0 0 0 0 " + std::to_string(p.utime) + " " + std::to_string(p.stime) +
           " 0 0 20 0 1 0 " + std::to_string(p.starttime) + " 0 " + std::to_string(p.rss) +
           " 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
  }
  int cores(pid_t pid) override { return w_->cores; }
  pid_t self_session() override { return w_->self_session; }
  pid_t self_pgrp() override { return w_->self_pgrp; }
  double ticks_per_second() override { return 100; }
  double page_size() override { return 4096; }

 private:
  FakeWorld* w_;
};

// A job that called setsid: main 500 leads session and group 500.
FakeWorld job_world() {
  FakeWorld w;
  w.procs[100] = {1, 100, 100, 50, 5, 1, 1000};  // nodus itself
  w.procs[500] = {100, 500, 500, 1000, 100, 10, 25600};
  w.procs[501] = {500, 500, 500, 300, 0, 11, 256};  // a DataLoader worker
  w.procs[900] = {1, 900, 900, 7777, 0, 2, 999};    // unrelated
  return w;
}

HostSampler make(FakeWorld* w, double t0 = 0) {
  return HostSampler(500, std::make_unique<FakeReader>(w), t0);
}

TEST(HostSampler, CountsTheTreesCpuSinceTheBaseline) {
  FakeWorld w = job_world();
  auto s = make(&w);
  w.procs[500].utime += 150;  // 1.5 s of CPU in 2 s
  w.procs[501].utime += 190;
  w.procs[501].stime += 10;   // 2 s in 2 s: a worker pegging a core
  w.procs[900].utime += 500;  // not the job's
  HostSample h = s.sample_at(1000, 2.0);
  EXPECT_EQ(h.t, 1000);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 175);
  EXPECT_DOUBLE_EQ(h.max_process_cpu_percent, 100);
  EXPECT_EQ(h.nprocs, 2);
  EXPECT_EQ(h.cores, 16);
  EXPECT_DOUBLE_EQ(h.rss_mib, (25600 + 256) * 4096.0 / (1024 * 1024));
}

// --image: the main process is the engine's client, outside the job's cgroup (in nodus's), and
// the container's processes, started by the engine, are in the job's cgroup and nobody's
// descendants here: the cgroup the job's record names is what is counted.
TEST(HostSampler, TheCgroupTheJobRecordNamesIsCountedOverTheMainProcesssTree) {
  FakeWorld w = job_world();
  w.procs[700] = {1, 700, 700, 0, 0, 20, 1000};  // the container's process, reparented
  w.cgroup_of[100] = "/cg/nodus";
  w.cgroup_of[500] = "/cg/nodus";  // the client stays in nodus's cgroup
  w.cgroup_of[700] = "/cg/nodus/job-1/libpod-x";
  w.cgroups["/cg/nodus"] = {100, 500, 501};
  w.cgroups["/cg/nodus/job-1"] = {700};
  HostSampler s(500, std::make_unique<FakeReader>(&w), 0.0, "/cg/nodus/job-1");
  EXPECT_EQ(s.cgroup(), "/cg/nodus/job-1");
  w.procs[700].utime += 100;  // 1 s in 1 s
  w.procs[501].utime += 50;   // the client's tree: not the job's work
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 100);
  EXPECT_EQ(h.nprocs, 1);
  // Without it, the client's tree is all that is seen.
  HostSampler tree(500, std::make_unique<FakeReader>(&w), 0.0);
  EXPECT_EQ(tree.cgroup(), "");
}

TEST(HostSampler, NewProcessCountsAllItsTimeExitedOneDropsOut) {
  FakeWorld w = job_world();
  auto s = make(&w);
  w.procs[502] = {500, 500, 500, 80, 20, 12, 100};  // started since: 1 s of CPU
  w.procs.erase(501);                               // exited: its last delta is lost
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 100);
  EXPECT_EQ(h.nprocs, 2);
  w.procs[502].utime += 50;
  h = s.sample_at(2, 2.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 50);
}

TEST(HostSampler, ReusedPidIsANewProcess) {
  FakeWorld w = job_world();
  auto s = make(&w);
  // 501 exits and a new process gets pid 501 (another start time), with less CPU so far.
  w.procs[501] = {500, 500, 500, 40, 0, 99, 256};
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 40);
}

TEST(HostSampler, OrphansInTheSessionStillCount) {
  FakeWorld w = job_world();
  auto s = make(&w);
  // 501 double-forked: 503 lives on, reparented to nodus (a child subreaper), still in the
  // job's session; 504, another orphan of nodus in another session, is not the job's.
  w.procs[503] = {100, 503, 500, 70, 0, 13, 10};
  w.procs[504] = {100, 504, 504, 900, 0, 14, 10};
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 70);
  EXPECT_EQ(h.nprocs, 3);
}

// The cost of a tick follows the job, not the host: with a thousand unrelated processes the
// sampler reads the stat of the job's processes only.
TEST(HostSampler, ReadsOnlyTheJobsProcesses) {
  FakeWorld w = job_world();
  for (pid_t pid = 2000; pid < 3000; ++pid) w.procs[pid] = {1, pid, pid, 5, 0, 1, 1};
  auto s = make(&w);
  w.stat_reads = 0;
  w.procs[501].utime += 40;
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 40);
  EXPECT_EQ(h.nprocs, 2);
  EXPECT_LE(w.stat_reads, 3);  // 500 and 501; never the 1,000 others
}

// With a cgroup of its own the members are the cgroup's: a process that left the session and
// was adopted by init (beyond any /proc walk from the job) still counts.
TEST(HostSampler, JobWithItsOwnCgroupCountsItsMembers) {
  FakeWorld w = job_world();
  w.procs[700] = {1, 700, 700, 0, 0, 15, 10};  // setsid + double fork: parent 1, own session
  w.cgroup_of[100] = "/cg/user";
  w.cgroup_of[500] = "/cg/user/nodus/job-1";
  w.cgroups["/cg/user/nodus/job-1"] = {500, 501, 700};
  auto s = make(&w);
  EXPECT_EQ(s.cgroup(), "/cg/user/nodus/job-1");
  w.procs[700].utime += 60;
  w.procs[900].utime += 100;  // not in the cgroup
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 60);
  EXPECT_EQ(h.nprocs, 3);
}

// A job in nodus's own cgroup (no cgroup of its own: NODUS_CGROUP=off) is walked, never taken
// as that cgroup's members, which may be the whole host.
TEST(HostSampler, SharedCgroupIsNotTheJobs) {
  FakeWorld w = job_world();
  w.cgroup_of[100] = "/cg/user";
  w.cgroup_of[500] = "/cg/user";
  w.cgroups["/cg/user"] = {100, 500, 501, 900};
  auto s = make(&w);
  EXPECT_EQ(s.cgroup(), "");
  w.procs[900].utime += 100;
  w.procs[501].utime += 10;
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 10);
  EXPECT_EQ(h.nprocs, 2);
}

TEST(HostSampler, JobSharingNodusSessionCountsOnlyDescendants) {
  FakeWorld w;
  w.procs[100] = {1, 100, 100, 0, 0, 1, 10};     // nodus, session 100
  w.procs[150] = {1, 150, 100, 0, 0, 1, 10};     // the user's shell, same session
  w.procs[500] = {100, 100, 100, 0, 0, 10, 10};  // the job: no setsid, no setpgid
  w.procs[501] = {500, 100, 100, 0, 0, 11, 10};
  auto s = make(&w);
  EXPECT_EQ(s.root().session, 0);
  EXPECT_EQ(s.root().pgrp, 0);
  w.procs[100].utime += 100;
  w.procs[150].utime += 100;
  w.procs[501].utime += 30;
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 30);
  EXPECT_EQ(h.nprocs, 2);
}

TEST(HostSampler, ZombiesCountCpuButNotAsProcesses) {
  FakeWorld w = job_world();
  auto s = make(&w);
  w.procs[501].state = 'Z';
  w.procs[501].utime += 20;
  w.procs[501].rss = 0;
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_DOUBLE_EQ(h.cpu_percent, 20);
  EXPECT_EQ(h.nprocs, 1);
}

TEST(HostSampler, GoneJobGivesAnEmptyTree) {
  FakeWorld w = job_world();
  auto s = make(&w);
  w.procs.erase(500);
  w.procs.erase(501);
  w.cores = 0;  // affinity of a gone pid is unknown: at least one core
  HostSample h = s.sample_at(1, 1.0);
  EXPECT_EQ(h.cpu_percent, 0);
  EXPECT_EQ(h.nprocs, 0);
  EXPECT_EQ(h.cores, 1);
}

TEST(SelectTree, FindsDescendantsListedBeforeTheirParents) {
  std::vector<ProcStat> all = {
      {.pid = 30, .comm = {}, .ppid = 20}, {.pid = 20, .comm = {}, .ppid = 10},
      {.pid = 10, .comm = {}, .ppid = 1},  {.pid = 40, .comm = {}, .ppid = 1},
      {.pid = 50, .comm = {}, .ppid = 30},
  };
  auto tree = select_tree(all, {.main_pid = 10});
  std::vector<pid_t> pids;
  for (const auto& p : tree) pids.push_back(p.pid);
  EXPECT_EQ(pids, (std::vector<pid_t>{30, 20, 10, 50}));
}

TEST(SelectTree, ProcessGroupMembersCount) {
  std::vector<ProcStat> all = {{.pid = 10, .comm = {}, .ppid = 1, .pgrp = 10, .session = 5},
                               {.pid = 11, .comm = {}, .ppid = 1, .pgrp = 10, .session = 5},
                               {.pid = 12, .comm = {}, .ppid = 1, .pgrp = 12, .session = 5}};
  EXPECT_EQ(select_tree(all, {.main_pid = 10, .session = 0, .pgrp = 10}).size(), 2u);
  EXPECT_EQ(select_tree(all, {.main_pid = 10, .session = 5, .pgrp = 10}).size(), 3u);
}

// --- the real /proc, with real processes ---

pid_t spawn(std::vector<std::string> args, bool new_session) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (new_session) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

// Kills the process (or its whole group) and returns the CPU seconds the kernel charged to it,
// an account independent of /proc/<pid>/stat sampling.
double stop(pid_t pid, bool group) {
  kill(group ? -pid : pid, SIGKILL);
  rusage ru{};
  wait4(pid, nullptr, 0, &ru);
  auto secs = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

double steady_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

TEST(HostSamplerReal, BusyChildShowsTheCpuItGot) {
  pid_t pid = spawn({"sh", "-c", "while :; do :; done"}, false);
  ASSERT_GT(pid, 0);
  double t0 = steady_now();
  HostSampler s(pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  HostSample h = s.sample();
  double elapsed = steady_now() - t0;
  double charged = stop(pid, false);
  // ~100% with a core to itself; on a loaded 2-core machine far less. Either way the sampled
  // CPU seconds must match what the kernel charged the child (which also includes the few ms
  // before the baseline and after the sample).
  double sampled = h.cpu_percent / 100 * elapsed;
  EXPECT_GT(h.cpu_percent, 2);
  EXPECT_LT(h.cpu_percent, 110);
  EXPECT_LE(sampled, charged * 1.1 + 0.05);
  EXPECT_GE(sampled, charged * 0.9 - 0.05);
  EXPECT_NEAR(h.max_process_cpu_percent, h.cpu_percent, 1e-9);
  EXPECT_EQ(h.nprocs, 1);
  EXPECT_GE(h.cores, 1);
  EXPECT_GT(h.rss_mib, 0);
}

TEST(HostSamplerReal, SleepingChildShowsAboutNothing) {
  pid_t pid = spawn({"sleep", "30"}, false);
  ASSERT_GT(pid, 0);
  HostSampler s(pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  HostSample h = s.sample();
  stop(pid, false);
  EXPECT_LT(h.cpu_percent, 2);
  EXPECT_EQ(h.nprocs, 1);
}

TEST(HostSamplerReal, CountsEveryProcessOfANewSession) {
  pid_t pid = spawn({"sh", "-c", "yes > /dev/null & yes > /dev/null & wait"}, true);
  ASSERT_GT(pid, 0);
  HostSampler s(pid);
  EXPECT_EQ(s.root().session, pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s.sample();  // both workers have started by now
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  HostSample h = s.sample();
  stop(pid, true);
  EXPECT_EQ(h.nprocs, 3);
  EXPECT_GT(h.cpu_percent, 2);
  EXPECT_LT(h.cpu_percent, 220);
  // Both workers burn: the tree's total is well above its busiest process.
  EXPECT_GT(h.cpu_percent, h.max_process_cpu_percent * 1.3);
}

}  // namespace
}  // namespace nodus::telemetry
