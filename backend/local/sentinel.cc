#include "backend/local/sentinel.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/local/process_tree.h"
#include "core/helper_children.h"

namespace nodus::backend {
namespace {

// Session and process group of pid from /proc/<pid>/stat, after the last ')' (comm may hold
// spaces and parentheses): fields 3 state, 4 ppid, 5 pgrp, 6 session.
bool read_ids(pid_t pid, pid_t* pgrp, pid_t* session) {
  char path[64], buf[1024];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* close = std::strrchr(buf, ')');
  if (!close) return false;
  char state;
  int ppid, pg, sid;
  if (std::sscanf(close + 1, " %c %d %d %d", &state, &ppid, &pg, &sid) != 4) return false;
  *pgrp = pg;
  *session = sid;
  return true;
}

bool carries_token(pid_t pid, const std::string& needle) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/environ", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static char buf[1 << 16];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return false;
  for (ssize_t i = 0; i < n;) {
    size_t len = strnlen(buf + i, static_cast<size_t>(n - i));
    if (len == needle.size() && std::memcmp(buf + i, needle.data(), len) == 0) return true;
    i += static_cast<ssize_t>(len) + 1;
  }
  return false;
}

// One pass over /proc: SIGKILL every process of the job. Returns how many were signalled.
int kill_pass(pid_t job_pid, const std::string& needle) {
  int killed = 0;
  DIR* dir = ::opendir("/proc");
  if (!dir) return 0;
  const pid_t self = ::getpid();
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    pid_t pgrp = 0, session = 0;
    if (!read_ids(static_cast<pid_t>(pid), &pgrp, &session)) continue;
    if (session == job_pid || pgrp == job_pid || carries_token(static_cast<pid_t>(pid), needle)) {
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      ++killed;
    }
  }
  ::closedir(dir);
  return killed;
}

[[noreturn]] void sentinel_main(int fd, pid_t job_pid, const std::string& needle) {
  // A Ctrl-C or a hang-up of the terminal reaches our process group: only EOF may end us.
  sigset_t block;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&block, sig);
  ::sigprocmask(SIG_BLOCK, &block, nullptr);
  int null = ::open("/dev/null", O_RDWR);
  for (int std_fd = 0; std_fd < 3; ++std_fd) ::dup2(null, std_fd);
  char byte = 0;
  ssize_t n;
  do {
    n = ::read(fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1 && byte == 'd') ::_exit(0);
  // The supervisor died: nothing of its job may run on. Repeat until a pass finds nothing
  // (a process may fork while we scan), bounded.
  for (int round = 0; round < 100 && kill_pass(job_pid, needle) > 0; ++round)
    ::poll(nullptr, 0, 10);
  ::_exit(0);
}

}  // namespace

Sentinel start_sentinel(pid_t job_pid, const std::string& tree_token) {
  int p[2];  // a socket pair, so that a dead sentinel never SIGPIPEs the supervisor
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0) return {};
  const std::string needle = std::string(local::kTreeTokenEnv) + "=" + tree_token;
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    return {};
  }
  if (pid == 0) {
    ::close(p[1]);
    sentinel_main(p[0], job_pid, needle);
  }
  ::close(p[0]);
  register_helper_child(pid);
  return {pid, p[1]};
}

void dismiss_sentinel(Sentinel& s) {
  if (s.pid <= 0) return;
  ssize_t ignored = ::send(s.fd, "d", 1, MSG_NOSIGNAL);
  (void)ignored;
  ::close(s.fd);
  ::waitpid(s.pid, nullptr, 0);
  unregister_helper_child(s.pid);
  s = {};
}

}  // namespace nodus::backend
