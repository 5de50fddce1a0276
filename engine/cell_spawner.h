#pragma once
// CellSpawner starts the supervisors of a sweep's cells. `nodus __supervise` reads its ticket
// from stdin until EOF before it does anything, so a spare one, started while cells run, has
// exec'd and loaded the binary by the time a cell ends: the next cell then starts by writing
// the spare its ticket, without a posix_spawn (which waits for the exec) or the loader on that
// path. A spare holds no claim and no job: one never used is killed and reaped, and one that
// died (Ctrl-C reaches it too) is replaced by a fresh spawn_supervisor.

#include <sys/types.h>

#include <deque>

#include "core/result.h"
#include "engine/supervisor_process.h"

namespace nodus::engine {

class CellSpawner {
 public:
  CellSpawner() = default;
  ~CellSpawner();  // kills and reaps the spares never used
  CellSpawner(const CellSpawner&) = delete;
  CellSpawner& operator=(const CellSpawner&) = delete;

  // A supervisor for `ticket`: a live spare handed the ticket, else spawn_supervisor(ticket).
  Result<SpawnedSupervisor> spawn(const Ticket& ticket);
  // Starts spares until `want` are ready (best effort: a failed spawn is left for spawn()).
  void top_up(size_t want);
  size_t spares() const { return spares_.size(); }

 private:
  struct Spare {
    pid_t pid = -1;
    int ticket_fd = -1;  // its stdin
    int status_fd = -1;  // its stdout
    int pidfd = -1;
  };
  static void discard(Spare& s);
  std::deque<Spare> spares_;
};

}  // namespace nodus::engine
