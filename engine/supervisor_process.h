#pragma once
// A supervisor in a process of its own: `nodus run --detach` and every sweep cell start
// `nodus __supervise`, hand it a ticket on stdin (the job id and what the row must not hold,
// such as the user's unredacted --env), and read one status line back from its stdout.

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/job_builder.h"

namespace nodus::engine {

struct Ticket {
  int64_t job_id = 0;
  int64_t sweep_id = 0;  // set: supervise this sweep (`sweep -d`) instead of one job
  std::map<std::string, std::string> env;
  // The command exactly as typed (a job's argv; a sweep's argv template): the store keeps it
  // redacted (redact_argv), and the job must get the real bytes. Empty: the stored argv is real.
  // Carried as hex, so invalid UTF-8 survives the JSON.
  std::vector<std::string> argv;
  bool no_wait = false;
  bool sweep_cell = false;  // dies with its sweep (PR_SET_PDEATHSIG) instead of a new session
  int64_t parent_pid = 0;
  Inventory inventory;
  // A detached sweep's pricing flags as typed (rate, rate_per, prices, prices_only), so that its
  // supervisor plans the cells at the price the user gave, not the catalog's (the stored
  // definition keeps them too, for --resume, with a --prices URL's credentials redacted).
  std::map<std::string, std::string> pricing;

  std::string to_json() const;
  static Ticket from_json(const std::string& text);
};

struct SpawnedSupervisor {
  pid_t pid = -1;
  int status_fd = -1;  // one status line (below), then EOF
};

// Whoever spawns one puts the job's real argv in the ticket: the store keeps it redacted (and as
// JSON, where invalid UTF-8 does not survive).
Result<SpawnedSupervisor> spawn_supervisor(const Ticket& ticket);

// The two steps of spawn_supervisor, for a caller that starts the process before it has the
// ticket (engine/cell_spawner.h): `nodus __supervise` started with posix_spawn (signals
// unblocked, stderr to /dev/null, a session of its own when own_session), reading its ticket
// from ticket_fd until EOF; then the ticket written (false: the process is gone). The caller
// closes ticket_fd.
struct SupervisorProcess {
  pid_t pid = -1;
  int ticket_fd = -1;  // its stdin
  int status_fd = -1;  // its stdout
};
Result<SupervisorProcess> start_supervisor_process(bool own_session);
bool write_ticket(int ticket_fd, const Ticket& ticket);

// Status lines, written by the supervisor process and read by whoever started it: "running"
// (the job was launched), "waiting" (for its GPUs), or "error <code> <message>" (not started;
// <code> is the exit code the starter should return). An empty line: the supervisor exited
// before saying anything.
struct LaunchStatus {
  enum class Kind { kNone, kRunning, kWaiting, kError };
  Kind kind = Kind::kNone;
  int code = 0;  // kError only; never 0 (a missing or zero code reads as 125)
  std::string message;
};
std::string status_line(const LaunchStatus& status);  // without the newline
LaunchStatus parse_status_line(const std::string& line);
std::string read_status_line(int fd);  // blocks until a line or EOF ("" then)

}  // namespace nodus::engine
