#include "backend/local/process_tree.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/helper_children.h"
#include "core/pidfd.h"
#include "core/proc.h"

namespace nodus::backend::local {
namespace {

std::mutex registry_mu;
std::map<pid_t, TreeRoot>& registry() {
  static std::map<pid_t, TreeRoot> trees;
  return trees;
}

TreeRoot root_of(pid_t main_pid) {
  std::lock_guard lock(registry_mu);
  auto it = registry().find(main_pid);
  return it == registry().end() ? TreeRoot{main_pid, "", false} : it->second;
}

bool contains(const std::vector<pid_t>& v, pid_t p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

}  // namespace

std::string new_tree_token() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "." + std::to_string(++counter);
}

void register_tree(pid_t main_pid, const std::string& token) {
  std::lock_guard lock(registry_mu);
  registry()[main_pid] = TreeRoot{main_pid, token, false};
}

void mark_main_reaped(pid_t main_pid) {
  std::lock_guard lock(registry_mu);
  auto it = registry().find(main_pid);
  if (it != registry().end()) it->second.main_reaped = true;
}

void unregister_tree(pid_t main_pid) {
  std::lock_guard lock(registry_mu);
  registry().erase(main_pid);
}

TreeContext live_context() {
  TreeContext ctx;
  ctx.self_pid = ::getpid();
  ctx.self_session = ::getsid(0);
  {
    std::lock_guard lock(registry_mu);
    for (const auto& [pid, root] : registry()) ctx.job_mains.push_back(pid);
  }
  ctx.is_helper = [](pid_t pid) { return is_helper_child(pid); };
  ctx.read_token = [](pid_t pid) { return read_proc_env(pid, kTreeTokenEnv); };
  return ctx;
}

std::vector<ProcStat> select_tree(const std::vector<ProcStat>& procs, const TreeRoot& root,
                                  const TreeContext& ctx) {
  const pid_t main_pid = root.main_pid;
  // The job's group and session (the main process called setsid: both are its pid) and the
  // main process, unless reaped (its pid may be another process's now).
  TreeSeeds seeds{.roots = {}, .session = main_pid, .pgrp = main_pid, .never = ctx.self_pid};
  if (!root.main_reaped) seeds.roots.push_back(main_pid);
  std::vector<bool> member = tree_members(procs, seeds);
  // Orphans reparented to this supervisor, with whatever they started since.
  const bool sole_job =
      ctx.job_mains.empty() || (ctx.job_mains.size() == 1 && ctx.job_mains[0] == main_pid);
  const size_t roots = seeds.roots.size();
  for (size_t i = 0; i < procs.size(); ++i) {
    const ProcStat& p = procs[i];
    if (member[i] || p.pid == ctx.self_pid) continue;
    const bool orphan = p.ppid == ctx.self_pid && p.session != ctx.self_session &&
                        !contains(ctx.job_mains, p.pid) && !ctx.is_helper(p.pid);
    if (!orphan) continue;
    // A zombie's environment cannot be read; reaping it harms no one (it is nobody's but ours
    // to wait for: not a helper, not a job's main process).
    bool ours = p.zombie();
    if (!ours) {
      auto t = ctx.read_token(p.pid);
      ours = t ? (!root.token.empty() && *t == root.token) : sole_job;
    }
    if (ours) seeds.roots.push_back(p.pid);
  }
  if (seeds.roots.size() > roots) member = tree_members(procs, seeds);
  std::vector<ProcStat> out;
  for (size_t i = 0; i < procs.size(); ++i)
    if (member[i]) out.push_back(procs[i]);
  return out;
}

std::vector<ProcStat> job_tree(pid_t main_pid) {
  return select_tree(scan_processes(), root_of(main_pid), live_context());
}

int signal_tree(pid_t main_pid, int sig) {
  int count = 0;
  const bool group = ::kill(-main_pid, sig) == 0;
  // Once each: what the group's signal reached is not signalled again (a job's TERM handler
  // would run twice, the second time in the middle of what the first started: its checkpoint).
  for (const ProcStat& p : job_tree(main_pid)) {
    if (p.zombie()) continue;
    if (group && p.pgrp == main_pid)
      ++count;
    else if (::kill(p.pid, sig) == 0)
      ++count;
  }
  return count;
}

std::optional<int> reap_if_zombie(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) return status;
  return std::nullopt;
}

namespace {

// The children of every thread of this process (/proc/self/task/*/children).
std::vector<pid_t> own_children() {
  std::vector<pid_t> out;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto text = read_small_file(std::string("/proc/self/task/") + e->d_name + "/children");
    if (!text) continue;
    const char* p = text->c_str();
    for (char* end = nullptr;; p = end) {
      long v = std::strtol(p, &end, 10);
      if (end == p) break;
      out.push_back(static_cast<pid_t>(v));
    }
  }
  ::closedir(dir);
  return out;
}

// True when nothing of the job can be left, known without reading every process on the host:
// this process is a child subreaper and the job's main process is reaped (reaping it here if it
// is a zombie), so every live descendant of the job has an ancestor chain that ends in one of
// this process's children (an orphan is reparented to us); when those children are only
// nodus's helpers and other jobs' main processes, the job has no process left.
bool nothing_left(pid_t main_pid, const std::function<void(pid_t, int)>& on_reaped) {
  int subreaper = 0;
  if (::prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || subreaper != 1) return false;
  std::vector<pid_t> mains;
  bool main_reaped = false;
  {
    std::lock_guard lock(registry_mu);
    for (const auto& [pid, root] : registry()) {
      if (pid == main_pid)
        main_reaped = root.main_reaped;
      else
        mains.push_back(pid);
    }
  }
  for (pid_t child : own_children()) {
    if (child == main_pid && !main_reaped) {
      auto status = reap_if_zombie(child);
      if (!status) return false;  // still running
      mark_main_reaped(main_pid);
      main_reaped = true;
      if (on_reaped) on_reaped(child, *status);
      continue;
    }
    if (is_helper_child(child) || std::find(mains.begin(), mains.end(), child) != mains.end())
      continue;
    return false;  // an orphan, or a child of ours we do not know: the scan decides
  }
  return main_reaped || process_gone(main_pid);
}

}  // namespace

Result<void> kill_tree(pid_t main_pid, std::chrono::milliseconds limit,
                       const std::function<void(pid_t, int)>& on_reaped) {
  if (nothing_left(main_pid, on_reaped)) return {};
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + limit;
  const pid_t self = ::getpid();
  for (;;) {
    std::vector<ProcStat> left;
    for (const ProcStat& p : job_tree(main_pid)) {
      if (p.ppid == self) {
        if (auto status = reap_if_zombie(p.pid)) {
          if (p.pid == main_pid) mark_main_reaped(main_pid);
          if (on_reaped) on_reaped(p.pid, *status);
          continue;
        }
      }
      left.push_back(p);
    }
    if (left.empty()) return {};

    ::kill(-main_pid, SIGKILL);
    for (const ProcStat& p : left)
      if (!p.zombie()) ::kill(p.pid, SIGKILL);

    const auto now = Clock::now();
    if (now >= deadline) {
      std::string names;
      for (const ProcStat& p : left) {
        if (!names.empty()) names += ", ";
        names += std::to_string(p.pid) + " (" + p.comm + ", state " + p.state + ")";
      }
      return Error::retryable("processes of job " + std::to_string(main_pid) + " still exist " +
                              std::to_string(limit.count()) + " ms after SIGKILL: " + names);
    }
    // Wait for the first of them to exit; a pidfd of a process that is already gone or a
    // zombie is readable at once, so rounds follow exits, not a fixed tick.
    std::vector<pollfd> fds;
    for (const ProcStat& p : left) {
      if (p.zombie() || fds.size() >= 256) continue;
      int fd = pidfd_open(p.pid);
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    auto wait = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(20));
    if (fds.empty()) wait = std::min<Clock::duration>(wait, std::chrono::milliseconds(1));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    for (const pollfd& f : fds) ::close(f.fd);
  }
}

}  // namespace nodus::backend::local
