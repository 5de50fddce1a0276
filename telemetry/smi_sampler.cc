// The nvidia-smi sampler: one `nvidia-smi --query-gpu=... -lms N` child streams CSV lines into a
// pipe that poll() drains without blocking. The child is registered as a helper so the local
// backend's tree kill leaves it alone, and it is killed and reaped with the sampler.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/helper_children.h"
#include "core/line_splitter.h"
#include "telemetry/gpu_sampler.h"
#include "telemetry/smi_csv.h"

extern char** environ;

namespace nodus::telemetry {
namespace {

// A line longer than this is not nvidia-smi CSV.
constexpr size_t kMaxLine = 64 * 1024;

// The full path of `name` (a path, or a name searched in PATH), or "" when not executable.
std::string find_executable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

class SmiSampler : public GpuSampler {
 public:
  SmiSampler(pid_t pid, int fd) : pid_(pid), fd_(fd) {}

  ~SmiSampler() override {
    close(fd_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      reap(0);
    }
  }

  std::string source() const override { return "nvidia-smi"; }

  std::vector<GpuSample> poll(const std::vector<int>& gpu_indices) override {
    std::vector<GpuSample> out;
    drain([&](std::string_view line) {
      auto sample = parse_smi_line(line);
      if (sample &&
          std::find(gpu_indices.begin(), gpu_indices.end(), sample->gpu_index) != gpu_indices.end())
        out.push_back(*sample);
    });
    return out;
  }

 private:
  // Reads what the pipe holds now, each complete line to on_line.
  void drain(const LineFn& on_line) {
    char chunk[8192];
    while (true) {
      ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n > 0) {
        lines_.feed(std::string_view(chunk, static_cast<size_t>(n)), on_line);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) reap(WNOHANG);  // the child closed its end: it exited or is exiting
      return;                     // EAGAIN: nothing more for now
    }
  }

  void reap(int flags) {
    if (pid_ <= 0) return;
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid_, &status, flags);
    } while (r < 0 && errno == EINTR);
    // r < 0 (ECHILD): someone else reaped it, e.g. a supervisor waiting on any child.
    if (r == pid_ || r < 0) {
      unregister_helper_child(pid_);
      pid_ = -1;
    }
  }

  pid_t pid_;
  int fd_;
  // A line longer than kMaxLine is not nvidia-smi CSV: its pieces parse as nothing.
  LineSplitter lines_{kMaxLine};
};

}  // namespace

std::unique_ptr<GpuSampler> make_smi_sampler(const std::string& executable, int interval_ms,
                                             std::string* error) {
  std::string path = find_executable(executable);
  if (path.empty()) {
    *error = executable + " not found";
    return nullptr;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("cannot create a pipe for nvidia-smi: ") + std::strerror(errno);
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group keeps a terminal's Ctrl-C for the supervisor to handle. Signals the
  // supervisor blocks or ignores (for signalfd, SIGPIPE) are reset, so that the child dies of
  // SIGPIPE if nodus dies and the pipe's reader goes away.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = smi_arguments(interval_ms);
  args.insert(args.begin(), path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    *error = "cannot start " + path + ": " + std::strerror(rc);
    return nullptr;
  }
  register_helper_child(pid);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return std::make_unique<SmiSampler>(pid, fds[0]);
}

}  // namespace nodus::telemetry
