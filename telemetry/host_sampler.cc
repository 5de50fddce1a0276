#include "telemetry/host_sampler.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>

#include "core/job.h"
#include "core/proc.h"

namespace nodus::telemetry {
namespace {

void append_pids(const std::string& text, std::vector<pid_t>& out) {
  const char* p = text.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p) break;
    if (v > 0) out.push_back(static_cast<pid_t>(v));
    p = end;
  }
}

class RealProcReader : public ProcReader {
 public:
  std::vector<pid_t> pids() override { return list_pids(); }

  std::optional<std::string> stat(pid_t pid) override {
    auto text = read_proc_file(pid, "stat");
    if (!text || text->empty()) return std::nullopt;  // exited between listing and reading
    return text;
  }

  int cores(pid_t pid) override {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(pid, sizeof set, &set) != 0) return 0;
    return CPU_COUNT(&set);
  }

  std::vector<pid_t> children(pid_t pid) override {
    std::vector<pid_t> out;
    const std::string task = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = ::opendir(task.c_str());
    if (dir == nullptr) return out;
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      if (auto text = read_small_file(task + "/" + e->d_name + "/children"))
        append_pids(*text, out);
    }
    ::closedir(dir);
    return out;
  }

  std::optional<std::string> cgroup_dir(pid_t pid) override { return process_cgroup_dir(pid); }

  std::optional<std::vector<pid_t>> cgroup_procs(const std::string& dir) override {
    auto text = read_small_file(dir + "/cgroup.procs");
    if (!text) return std::nullopt;
    std::vector<pid_t> out;
    append_pids(*text, out);
    // Cgroups the job made below its own (a root job may): their members are the job's too.
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
        if (auto sub = cgroup_procs(dir + "/" + e->d_name))
          out.insert(out.end(), sub->begin(), sub->end());
      }
      ::closedir(d);
    }
    return out;
  }

  pid_t self_pid() override { return getpid(); }
  pid_t self_session() override { return getsid(0); }
  pid_t self_pgrp() override { return getpgrp(); }
  double ticks_per_second() override { return static_cast<double>(sysconf(_SC_CLK_TCK)); }
  double page_size() override { return static_cast<double>(sysconf(_SC_PAGESIZE)); }
};

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProcReader::~ProcReader() = default;

std::vector<pid_t> ProcReader::children(pid_t pid) {
  std::vector<pid_t> out;
  for (pid_t p : pids()) {
    auto text = stat(p);
    auto st = text ? parse_proc_stat(*text) : std::nullopt;
    if (st && st->ppid == pid) out.push_back(p);
  }
  return out;
}

std::optional<std::string> ProcReader::cgroup_dir(pid_t) { return std::nullopt; }
std::optional<std::vector<pid_t>> ProcReader::cgroup_procs(const std::string&) {
  return std::nullopt;
}
pid_t ProcReader::self_pid() { return getpid(); }

std::unique_ptr<ProcReader> make_proc_reader() { return std::make_unique<RealProcReader>(); }

std::vector<ProcStat> select_tree(const std::vector<ProcStat>& all, const TreeRoot& root) {
  const std::vector<bool> member = tree_members(all, {{root.main_pid}, root.session, root.pgrp, 0});
  std::vector<ProcStat> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (member[i]) out.push_back(all[i]);
  return out;
}

TreeWalker::TreeWalker(pid_t main_pid, ProcReader& reader, const std::string& cgroup)
    : reader_(reader) {
  root_.main_pid = main_pid;
  if (auto st = read(main_pid)) {
    if (st->session != reader_.self_session()) root_.session = st->session;
    if (st->pgrp != reader_.self_pgrp()) root_.pgrp = st->pgrp;
  }
  // A cgroup of its own: one the job's main process is in and nodus is not (without one the
  // job shares nodus's, which may hold the whole host).
  if (!cgroup.empty() && reader_.cgroup_procs(cgroup)) {
    cgroup_ = cgroup;
    return;
  }
  auto job = reader_.cgroup_dir(main_pid);
  auto self = reader_.cgroup_dir(0);
  if (job && self && *job != *self && reader_.cgroup_procs(*job)) cgroup_ = *job;
}

std::optional<ProcStat> TreeWalker::read(pid_t pid) {
  auto text = reader_.stat(pid);
  return text ? parse_proc_stat(*text) : std::nullopt;
}

std::vector<ProcStat> TreeWalker::members() {
  std::vector<ProcStat> out;
  if (!cgroup_.empty()) {
    if (auto pids = reader_.cgroup_procs(cgroup_)) {
      std::set<pid_t> seen;
      for (pid_t pid : *pids)
        if (seen.insert(pid).second)
          if (auto st = read(pid)) out.push_back(*st);
      return out;
    }
    // The cgroup is gone (the job ended and it was removed): the walk below finds what is left.
  }
  // Breadth first from the main process and from the orphans this process adopted that are in
  // the job's session or group (a double-forked daemon of the job).
  std::set<pid_t> seen;
  std::vector<pid_t> queue{root_.main_pid};
  if (root_.session != 0 || root_.pgrp != 0) {
    for (pid_t pid : reader_.children(reader_.self_pid())) {
      if (pid == root_.main_pid) continue;
      auto st = read(pid);
      if (st && ((root_.session != 0 && st->session == root_.session) ||
                 (root_.pgrp != 0 && st->pgrp == root_.pgrp)))
        queue.push_back(pid);
    }
  }
  for (size_t i = 0; i < queue.size(); ++i) {
    const pid_t pid = queue[i];
    if (!seen.insert(pid).second) continue;
    auto st = read(pid);
    if (!st) continue;  // exited between listing and reading
    out.push_back(*st);
    for (pid_t child : reader_.children(pid)) queue.push_back(child);
  }
  return out;
}

HostSampler::HostSampler(pid_t main_pid, std::unique_ptr<ProcReader> reader,
                         std::optional<double> t_mono, const std::string& cgroup)
    : reader_(std::move(reader)), walker_(main_pid, *reader_, cgroup) {
  measure(unix_now(), t_mono ? *t_mono : steady_seconds());
}

HostSample HostSampler::sample() { return sample_at(unix_now(), steady_seconds()); }

HostSample HostSampler::sample_at(double t_unix, double t_mono) {
  const double elapsed = t_mono - last_mono_;
  HostSample hs = measure(t_unix, t_mono);
  const double tck = reader_->ticks_per_second();
  if (elapsed > 0 && tck > 0) {
    hs.cpu_percent = total_delta_ / tck / elapsed * 100.0;
    hs.max_process_cpu_percent = max_delta_ / tck / elapsed * 100.0;
  }
  return hs;
}

// Reads the tree, updates the per-process baseline and leaves the CPU ticks used since the
// previous reading in total_delta_ and max_delta_.
HostSample HostSampler::measure(double t_unix, double t_mono) {
  HostSample hs;
  hs.t = t_unix;
  int cores = reader_->cores(walker_.root().main_pid);
  if (cores <= 0) cores = reader_->cores(0);
  hs.cores = std::max(cores, 1);

  std::map<std::pair<pid_t, uint64_t>, uint64_t> now;
  uint64_t total_delta = 0;
  uint64_t max_delta = 0;
  int64_t rss_pages = 0;
  for (const auto& p : walker_.members()) {
    uint64_t ticks = p.utime + p.stime;
    auto key = std::make_pair(p.pid, p.starttime);
    auto prev = ticks_.find(key);
    // A process not seen before started since the previous call: all its time is new.
    uint64_t delta = prev == ticks_.end() ? ticks : ticks - std::min(ticks, prev->second);
    now[key] = ticks;
    total_delta += delta;
    max_delta = std::max(max_delta, delta);
    if (p.state == 'Z') continue;  // exited, not yet reaped: no process, no memory
    ++hs.nprocs;
    rss_pages += p.rss_pages;
  }
  ticks_ = std::move(now);
  last_mono_ = t_mono;
  hs.rss_mib = static_cast<double>(rss_pages) * reader_->page_size() / (1024.0 * 1024.0);
  total_delta_ = static_cast<double>(total_delta);
  max_delta_ = static_cast<double>(max_delta);
  return hs;
}

}  // namespace nodus::telemetry
