#include "telemetry/host_sampler.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "core/job.h"
#include "core/proc.h"

namespace nodus::telemetry {
namespace {

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

std::unique_ptr<ProcReader> make_proc_reader() { return std::make_unique<RealProcReader>(); }

std::vector<ProcStat> select_tree(const std::vector<ProcStat>& all, const TreeRoot& root) {
  std::set<pid_t> members;
  for (const auto& p : all) {
    if (p.pid == root.main_pid || (root.session != 0 && p.session == root.session) ||
        (root.pgrp != 0 && p.pgrp == root.pgrp))
      members.insert(p.pid);
  }
  // Descendants by PPid, to a fixed point: a child may be listed before its parent.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& p : all)
      if (!members.count(p.pid) && members.count(p.ppid)) grew = members.insert(p.pid).second;
  }
  std::vector<ProcStat> out;
  for (const auto& p : all)
    if (members.count(p.pid)) out.push_back(p);
  return out;
}

HostSampler::HostSampler(pid_t main_pid, std::unique_ptr<ProcReader> reader,
                         std::optional<double> t_mono)
    : reader_(std::move(reader)) {
  root_.main_pid = main_pid;
  if (auto text = reader_->stat(main_pid)) {
    if (auto st = parse_proc_stat(*text)) {
      if (st->session != reader_->self_session()) root_.session = st->session;
      if (st->pgrp != reader_->self_pgrp()) root_.pgrp = st->pgrp;
    }
  }
  measure(unix_now(), t_mono ? *t_mono : steady_seconds());
}

std::vector<ProcStat> HostSampler::read_all() {
  std::vector<ProcStat> all;
  for (pid_t pid : reader_->pids()) {
    auto text = reader_->stat(pid);
    if (!text) continue;
    if (auto st = parse_proc_stat(*text)) all.push_back(*st);
  }
  return all;
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
  int cores = reader_->cores(root_.main_pid);
  if (cores <= 0) cores = reader_->cores(0);
  hs.cores = std::max(cores, 1);

  std::map<std::pair<pid_t, uint64_t>, uint64_t> now;
  uint64_t total_delta = 0;
  uint64_t max_delta = 0;
  int64_t rss_pages = 0;
  for (const auto& p : select_tree(read_all(), root_)) {
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
