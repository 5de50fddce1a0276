#include "engine/cell_spawner.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "core/pidfd.h"

namespace nodus::engine {
namespace {

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
    // As spawn_supervisor starts a sweep cell's: in the sweep's session and process group.
    auto process = start_supervisor_process(false);
    if (!process.ok()) return;
    Spare s{process->pid, process->ticket_fd, process->status_fd, pidfd_open(process->pid)};
    spares_.push_back(s);
  }
}

Result<SpawnedSupervisor> CellSpawner::spawn(const Ticket& ticket) {
  while (!spares_.empty()) {
    Spare s = spares_.front();
    spares_.pop_front();
    if (exited(s.pidfd) || !write_ticket(s.ticket_fd, ticket)) {
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
