#include "backend/local/run_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "backend/local/launch.h"
#include "backend/local/process_tree.h"
#include "core/helper_children.h"

namespace nodus::backend::local {
namespace {

// Appends what the pipe holds now; closes it (fd = -1) at end of file.
void read_into(int& fd, std::string& into) {
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more for now
    if (n == 0) {
      ::close(fd);
      fd = -1;
      return;
    }
    size_t keep =
        std::min(static_cast<size_t>(n), kMaxCapture - std::min(kMaxCapture, into.size()));
    into.append(buf, keep);
  }
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string first_line(const std::string& text, size_t max_len) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    size_t e = line.find_last_not_of(" \t\r");
    line = line.substr(b, e - b + 1);
    if (line.size() > max_len) line = line.substr(0, max_len) + "...";
    return line;
  }
  return "";
}

Result<Captured> run_capture(const std::vector<std::string>& argv, std::vector<std::string> env,
                             std::chrono::milliseconds timeout) {
  // A token no job has: the helper is never counted as an orphan of a job.
  std::erase_if(
      env, [](const std::string& e) { return e.rfind(std::string(kTreeTokenEnv) + "=", 0) == 0; });
  env.push_back(std::string(kTreeTokenEnv) + "=helper");

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    return Error::permanent(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return Error::permanent(std::string("pipe: ") + std::strerror(errno));
  }
  auto launched = launch({argv, env, "", out[1], err[1], -1, {}});
  ::close(out[1]);
  ::close(err[1]);
  if (!launched.ok()) {
    ::close(out[0]);
    ::close(err[0]);
    return launched.error();
  }
  const pid_t pid = launched->pid;
  register_helper_child(pid);
  int fds[2] = {out[0], err[0]};
  for (int fd : fds) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  Captured result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool exited = false;
  // Until the helper exited and both pipes reached end of file, or the deadline.
  while (!exited || fds[0] >= 0 || fds[1] >= 0) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) break;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    pollfd p[3] = {
        {exited ? -1 : launched->pidfd, POLLIN, 0}, {fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (::ppoll(p, 3, &ts, nullptr) < 0 && errno != EINTR) break;
    if (p[1].revents) read_into(fds[0], result.out);
    if (p[2].revents) read_into(fds[1], result.err);
    if (p[0].revents) exited = true;
  }
  if (!exited || fds[0] >= 0 || fds[1] >= 0) {
    // Overran: the helper, or something it left behind holding the pipes.
    result.timed_out = !exited;
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  unregister_helper_child(pid);
  result.exit_code = decode_status(status);
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  ::close(launched->pidfd);
  return result;
}

}  // namespace nodus::backend::local
