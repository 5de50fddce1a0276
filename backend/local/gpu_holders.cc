#include "backend/local/gpu_holders.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/local/process_tree.h"
#include "core/pidfd.h"

namespace nodus::backend::local {

std::vector<DeviceHolder> find_device_holders(const std::vector<ProcStat>& procs,
                                              const std::string& device_prefix) {
  std::vector<DeviceHolder> holders;
  for (const ProcStat& p : procs) {
    if (p.zombie()) continue;
    for (const std::string& target : read_proc_fd_targets(p.pid)) {
      if (target.rfind(device_prefix, 0) == 0) {
        holders.push_back({p.pid, p.comm});
        break;
      }
    }
  }
  return holders;
}

std::string kill_gpu_holders(pid_t main_pid, const std::string& device_prefix,
                             std::chrono::milliseconds wait) {
  const std::string devices = device_prefix + "*";
  std::vector<DeviceHolder> holders = find_device_holders(job_tree(main_pid), device_prefix);
  if (holders.empty()) return "no process of the job holds " + devices;

  std::vector<pollfd> fds;
  std::string names;
  for (const DeviceHolder& h : holders) {
    int fd = pidfd_open(h.pid);
    ::kill(h.pid, SIGKILL);
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    names += (names.empty() ? "" : ", ") + std::to_string(h.pid) + " (" + h.comm + ")";
  }
  // GPU memory is free only once they have exited: wait for every pidfd to turn readable.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (pollfd& f : fds) {
    for (;;) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) break;
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
      if (::ppoll(&f, 1, &ts, nullptr) != 0) break;  // readable, or an error: stop waiting
    }
    ::close(f.fd);
  }
  std::string still;
  for (const DeviceHolder& h : holders) {
    if (h.pid != main_pid) reap_if_zombie(h.pid);  // the main's status is wait()'s to take
    if (!process_gone(h.pid)) still += (still.empty() ? "" : ", ") + std::to_string(h.pid);
  }
  const size_t n = holders.size();
  std::string line = "killed " + std::to_string(n) + " leftover process" + (n == 1 ? "" : "es") +
                     " holding " + devices + ": " + names;
  if (!still.empty())
    line += "; still running " + std::to_string(wait.count()) + " ms later: " + still;
  return line;
}

}  // namespace nodus::backend::local
