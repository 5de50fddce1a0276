#include "engine/cell_spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <string>

#include "core/pidfd.h"

extern char** environ;

namespace nodus::engine {
namespace {

// `nodus __supervise` as spawn_supervisor starts a sweep cell's (same session and process
// group as the sweep, signals unblocked, stderr to /dev/null), waiting for its ticket on stdin.
bool start_spare(pid_t& pid, int& ticket_fd, int& status_fd) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return false;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  char arg0[] = "nodus";
  char arg1[] = "__supervise";
  char* argv[] = {arg0, arg1, nullptr};
  int rc = posix_spawn(&pid, exe, &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return false;
  }
  ticket_fd = in[1];
  status_fd = out[0];
  return true;
}

bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;  // EPIPE: it died (SIGPIPE is ignored, engine/signals.h)
    p += w;
    left -= static_cast<size_t>(w);
  }
  return true;
}

bool exited(int pidfd) {
  if (pidfd < 0) return false;
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace

void CellSpawner::discard(Spare& s) {
  if (s.ticket_fd >= 0) close(s.ticket_fd);
  if (s.status_fd >= 0) close(s.status_fd);
  ::kill(s.pid, SIGKILL);  // it has read no ticket: nothing of a job's is in it
  while (::waitpid(s.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (s.pidfd >= 0) close(s.pidfd);
  s = {};
}

CellSpawner::~CellSpawner() {
  for (Spare& s : spares_) discard(s);
}

void CellSpawner::top_up(size_t want) {
  while (spares_.size() < want) {
    Spare s;
    if (!start_spare(s.pid, s.ticket_fd, s.status_fd)) return;
    s.pidfd = pidfd_open(s.pid);
    spares_.push_back(s);
  }
}

Result<SpawnedSupervisor> CellSpawner::spawn(const Ticket& ticket) {
  while (!spares_.empty()) {
    Spare s = spares_.front();
    spares_.pop_front();
    if (exited(s.pidfd) || !write_all(s.ticket_fd, ticket.to_json())) {
      discard(s);
      continue;
    }
    close(s.ticket_fd);  // EOF: the ticket is whole
    if (s.pidfd >= 0) close(s.pidfd);
    return SpawnedSupervisor{s.pid, s.status_fd};
  }
  return spawn_supervisor(ticket);
}

}  // namespace nodus::engine
