// nodus __supervise: the supervisor of a detached job or a sweep cell, in a process of its own.
// Not for users: `run --detach` and `sweep` start it with a ticket on stdin.

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <iterator>

#include "backend/backend.h"
#include "cli/common.h"
#include "cli/sweep_command.h"
#include "core/error.h"
#include "engine/gpu_wait.h"
#include "engine/signals.h"
#include "engine/supervisor.h"
#include "engine/supervisor_process.h"

namespace nodus::cli {
namespace {

// Writes the one status line its starter waits for, then points stdout at /dev/null.
class StatusLine {
 public:
  void send(const std::string& line) {
    if (sent_) return;
    sent_ = true;
    std::string text = line + "\n";
    ssize_t ignored = write(1, text.data(), text.size());
    (void)ignored;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dup2(null, 1);
    close(null);
  }

 private:
  bool sent_ = false;
};

int supervise() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  engine::Ticket ticket = engine::Ticket::from_json(text);
  // Whoever started us may stop reading the status line (a sweep does not wait for it).
  std::signal(SIGPIPE, SIG_IGN);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  dup2(null, 0);
  close(null);
  if (ticket.sweep_cell) {
    // A cell stops with its sweep: SIGTERM is a stop, handled like `nodus stop`.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != ticket.parent_pid) return exit_code::kNodusError;
  }
  StatusLine status;
  if (ticket.sweep_id != 0) {
    try {
      return supervise_sweep(ticket, [&status](const std::string& line) { status.send(line); });
    } catch (const Fatal& e) {
      status.send("error " + std::to_string(e.code()) + " " + e.what());
      return e.code();
    }
  }
  engine::SignalWatch signals;
  auto store = open_store();
  auto found = store->job(ticket.job_id);
  if (!found) {
    status.send("error 125 job " + std::to_string(ticket.job_id) + " not found");
    return exit_code::kNodusError;
  }
  JobRecord job = *found;
  job.supervisor_pid = getpid();
  job.supervisor_start = store::process_start_time(job.supervisor_pid);
  store->update_job(job);

  bool claimed = job.gpu_count == 0 || static_cast<int>(job.gpu_indices.size()) == job.gpu_count;
  if (!claimed && job.backend == "local") {
    bool busy_now = !store->claim_gpus(job.id, job.gpu_type, job.gpu_count, ticket.inventory.gpus,
                                       job.supervisor_pid, job.supervisor_start);
    if (busy_now) {
      if (ticket.no_wait) {
        job.state = JobState::kFailed;
        job.ended_at = unix_now();
        job.exit_code = exit_code::kNodusError;
        job.note = "not started: its GPUs were busy (--no-wait)";
        store->update_job(job);
        status.send("error 125 --no-wait: not enough free " + job.gpu_type +
                    " GPUs right now (job " + std::to_string(job.id) + " not started)");
        return exit_code::kNodusError;
      }
      status.send("waiting");
      auto got = engine::acquire_gpus(*store, job, ticket.inventory, false, &signals, false);
      if (got != engine::Acquired::kClaimed) {
        job.state = JobState::kStopped;
        job.ended_at = unix_now();
        job.note = "not started: stopped while waiting for GPUs";
        store->update_job(job);
        return exit_code::kInterrupted;
      }
    } else {
      job = *store->job(job.id);  // the claim wrote the indices
    }
  }
  job.state = JobState::kStarting;
  store->update_job(job);

  auto backend = backend::make_backend(job.backend);
  engine::Supervisor supervisor(*store, *backend);
  engine::SuperviseRun run;
  run.options = engine::SuperviseOptions::from_json(job.options);
  run.attach = false;
  run.env = ticket.env;
  run.signals = &signals;
  run.on_launched = [&status](const JobRecord&, const std::string& error) {
    status.send(error.empty() ? "running" : "error 125 " + error);
  };
  try {
    return supervisor.run(job, run);
  } catch (const Fatal& e) {
    status.send("error " + std::to_string(e.code()) + " " + e.what());
    return e.code();
  }
}

}  // namespace

Command add_supervise(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("__supervise", "");
  sub->group("");  // hidden
  return {sub, [] { return supervise(); }};
}

}  // namespace nodus::cli
