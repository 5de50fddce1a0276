#pragma once
// Helpers of the hostile input tests (flooding output, metrics files, billing): a marker that
// finds every process of a job in /proc whatever it did to its process group or session, and a
// watcher of the supervisor's peak memory (VmHWM of every nodus process of one NODUS_HOME).

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/nodus_process.h"

namespace nodus::testing {

// Rates as the built-in catalog has them: NODUS_LOCAL_GPUS=H100:2, H100-SXM at $2.60/GPU-hour
// (tests/cli/fixtures.h gives the same rate), so $0.01 lasts 6.92 s on 2 GPUs.
inline constexpr double kH100Rate = 2.6;
inline double seconds_for(double usd, int gpus) { return usd * 3600 / (kH100Rate * gpus); }

inline std::string unique_marker() {
  std::random_device rd;
  return "nodus-hostile-" + std::to_string(getpid()) + "-" + std::to_string(rd());
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Pids (other than this test) whose command line or environment contains `marker`.
inline std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == getpid()) continue;
    std::string base = "/proc/" + std::to_string(pid);
    std::string stat = slurp(base + "/stat");
    auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') continue;
    if (slurp(base + "/cmdline").find(marker) != std::string::npos ||
        slurp(base + "/environ").find(marker) != std::string::npos)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

// Waits up to `timeout` for no process with the marker to be left; kills what is (so a failed
// test leaves nothing behind) and returns how many there were.
inline size_t survivors(const std::string& marker, double timeout_s = 3) {
  double until = now_seconds() + timeout_s;
  std::vector<pid_t> left;
  do {
    left = processes_with(marker);
    if (left.empty()) return 0;
    usleep(50'000);
  } while (now_seconds() < until);
  for (pid_t p : left) kill(p, SIGKILL);
  return left.size();
}

// The largest VmHWM (KiB) seen, while it runs, of any nodus process of one NODUS_HOME: the
// attached `nodus run`, a sweep and its `nodus __supervise` children.
class PeakRss {
 public:
  explicit PeakRss(const std::string& home) : needle_("NODUS_HOME=" + home + '\0') {
    thread_ = std::thread([this] {
      while (!stop_) {
        sample();
        usleep(50'000);
      }
    });
  }
  ~PeakRss() { stop(); }
  long stop() {
    if (!stop_.exchange(true)) thread_.join();
    return peak_kib_;
  }
  long peak_kib() const { return peak_kib_; }

 private:
  void sample() {
    DIR* d = opendir("/proc");
    if (!d) return;
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      std::string base = "/proc/" + std::to_string(pid);
      std::string exe;
      std::error_code ec;
      exe = std::filesystem::read_symlink(base + "/exe", ec).filename().string();
      if (ec || exe != std::filesystem::path(NODUS_BIN).filename().string()) continue;
      if (slurp(base + "/environ").find(needle_) == std::string::npos) continue;
      std::istringstream status(slurp(base + "/status"));
      std::string line;
      while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) {
          long kib = std::strtol(line.c_str() + 6, nullptr, 10);
          if (kib > peak_kib_) peak_kib_ = kib;
        }
    }
    closedir(d);
  }

  std::string needle_;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_kib_{0};
  std::thread thread_;
};

// Bytes of the store (database and its write-ahead log).
inline uint64_t store_bytes(const NodusHome& home) {
  uint64_t total = 0;
  for (const char* f : {"nodus.db", "nodus.db-wal"}) {
    std::error_code ec;
    auto n = std::filesystem::file_size(home.file(f), ec);
    if (!ec) total += n;
  }
  return total;
}

}  // namespace nodus::testing
