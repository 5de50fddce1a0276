// sampler_cost: the CPU cost of one host-sampler tick, by how the job's processes are found,
// with the host as it is and with CROWD more unrelated processes, all in one run and in one
// process (bench/run.sh builds it against the build's static libraries).
//
//   sampler_cost CROWD TICKS REPS
//
// Two jobs of three processes each (sh and two `sleep`, in a session of their own): one in a
// cgroup of its own (backend/local/cgroup.h), one without. Three ways to sample them, taken rep
// by rep in turn so that load on the machine falls on all alike:
//   scan     the sampler before issue 17: every /proc/PID/stat on the host, then select_tree;
//   walk     HostSampler without a cgroup: /proc/PID/task/*/children from the main process;
//   cgroup   HostSampler with the job's cgroup: its cgroup.procs.
// CPU is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so time other processes take from
// the machine does not count. Prints JSON on stdout: ms per tick, median (min, max) over REPS.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/local/cgroup.h"
#include "core/proc.h"
#include "telemetry/host_sampler.h"

extern char** environ;
using namespace nodus;

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// A job: setsid, then (with a cgroup) join it, then a shell with two sleeping children.
pid_t start_job(int cgroup_procs_fd) {
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (cgroup_procs_fd >= 0 && write(cgroup_procs_fd, "0", 1) != 1) _exit(125);
    execl("/bin/sh", "sh", "-c", "sleep 600 & sleep 600 & wait", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// n idle processes that are not this process's children (as on a real host, where the
// supervisor's children are its job and helpers): an intermediate process in a group of its own
// starts them and waits; killing the group ends them all. Returns the group.
pid_t crowd(int n) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t leader = fork();
  if (leader == 0) {
    setpgid(0, 0);
    char sleep_[] = "sleep", secs[] = "600";
    char* argv[] = {sleep_, secs, nullptr};
    for (int i = 0; i < n; ++i) {
      pid_t pid = -1;
      posix_spawnp(&pid, "sleep", nullptr, nullptr, argv, environ);
    }
    (void)!write(ready[1], "x", 1);
    for (;;) pause();
  }
  close(ready[1]);
  char c;
  (void)!read(ready[0], &c, 1);
  close(ready[0]);
  return leader;
}

// The sampler as it was: every process on the host read, then the tree selected.
size_t scan_tick(const telemetry::TreeRoot& root) {
  std::vector<ProcStat> all;
  for (pid_t pid : list_pids())
    if (auto text = read_proc_file(pid, "stat"))
      if (auto st = parse_proc_stat(*text)) all.push_back(*st);
  return telemetry::select_tree(all, root).size();
}

struct Figure {
  std::vector<double> ms;
  std::string json(const char* name) const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    char buf[200];
    std::snprintf(buf, sizeof buf, "\"%s\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}", name,
                  s.empty() ? 0 : s[s.size() / 2], s.empty() ? 0 : s.front(),
                  s.empty() ? 0 : s.back());
    return buf;
  }
};

struct Phase {
  Figure scan, walk, cgroup;
  size_t processes = 0, members_scan = 0, members_walk = 0, members_cgroup = 0;
};

Phase measure(pid_t plain, pid_t contained, int ticks, int reps) {
  Phase p;
  p.processes = list_pids().size();
  telemetry::TreeRoot root{plain, plain, plain};
  telemetry::HostSampler walk(plain);
  std::optional<telemetry::HostSampler> cg;
  if (contained > 0) cg.emplace(contained);
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = thread_cpu_ms();
    for (int i = 0; i < ticks; ++i) p.members_scan = scan_tick(root);
    p.scan.ms.push_back((thread_cpu_ms() - t0) / ticks);
    t0 = thread_cpu_ms();
    for (int i = 0; i < ticks; ++i) p.members_walk = walk.sample().nprocs;
    p.walk.ms.push_back((thread_cpu_ms() - t0) / ticks);
    if (cg) {
      t0 = thread_cpu_ms();
      for (int i = 0; i < ticks; ++i) p.members_cgroup = cg->sample().nprocs;
      p.cgroup.ms.push_back((thread_cpu_ms() - t0) / ticks);
    }
  }
  return p;
}

std::string phase_json(const Phase& p) {
  std::string s = "{\"processes\": " + std::to_string(p.processes) + ", " + p.scan.json("scan") +
                  ", " + p.walk.json("walk");
  if (!p.cgroup.ms.empty()) s += ", " + p.cgroup.json("cgroup");
  s += ", \"members\": {\"scan\": " + std::to_string(p.members_scan) +
       ", \"walk\": " + std::to_string(p.members_walk) +
       ", \"cgroup\": " + std::to_string(p.members_cgroup) + "}}";
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: sampler_cost CROWD TICKS REPS\n");
    return 2;
  }
  const int n = std::atoi(argv[1]), ticks = std::atoi(argv[2]), reps = std::atoi(argv[3]);
  std::string why;
  backend::local::JobCgroup group;
  if (auto parent = backend::local::cgroup_parent(&why)) {
    auto made =
        backend::local::JobCgroup::create(*parent, "bench-sampler-" + std::to_string(getpid()));
    if (made.ok())
      group = std::move(*made);
    else
      why = made.error().message;
  }
  pid_t plain = start_job(-1);
  pid_t contained = group.valid() ? start_job(group.procs_fd()) : -1;
  usleep(300 * 1000);  // both shells have started their sleeps
  Phase base = measure(plain, contained, ticks, reps);
  pid_t others = crowd(n);
  usleep(300 * 1000);
  Phase crowded = measure(plain, contained, ticks, reps);
  if (others > 0) {
    kill(-others, SIGKILL);
    waitpid(others, nullptr, 0);
  }
  kill(-plain, SIGKILL);
  waitpid(plain, nullptr, 0);
  if (contained > 0) {
    (void)group.kill(std::chrono::seconds(5));
    waitpid(contained, nullptr, 0);
    (void)group.remove();
  }
  std::printf(
      "{\"crowd\": %d, \"ticks\": %d, \"reps\": %d, \"cgroup\": %s, \"base\": %s, "
      "\"crowded\": %s}\n",
      n, ticks, reps, group.valid() || contained > 0 ? "true" : ("\"" + why + "\"").c_str(),
      phase_json(base).c_str(), phase_json(crowded).c_str());
  return 0;
}
