#include "engine/supervise_main.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "core/error.h"
#include "core/lifecycle.h"
#include "engine/gpu_wait.h"
#include "engine/signals.h"
#include "engine/supervisor.h"
#include "engine/supervisor_process.h"

namespace nodus::engine {
namespace {

// Writes the one status line its starter waits for, then points stdout at /dev/null.
class StatusWriter {
 public:
  void send(const LaunchStatus& status) {
    if (sent_) return;
    sent_ = true;
    std::string text = status_line(status) + "\n";
    ssize_t ignored = write(1, text.data(), text.size());
    (void)ignored;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dup2(null, 1);
    close(null);
  }
  void error(int code, const std::string& message) {
    send({LaunchStatus::Kind::kError, code, message});
  }

 private:
  bool sent_ = false;
};

// A local job's GPUs, claimed for this process (the owner whose death frees them). Busy: says
// "waiting" and waits like an attached run, unless the ticket says --no-wait.
Acquired claim_gpus(store::Store& store, JobRecord& job, const Ticket& ticket, SignalWatch& signals,
                    const std::function<void(const LaunchStatus&)>& status) {
  bool claimed = job.gpu_count == 0 || static_cast<int>(job.gpu_indices.size()) == job.gpu_count;
  if (claimed || job.backend != "local") return Acquired::kClaimed;
  Acquired got = acquire_gpus(store, job, ticket.inventory, true, &signals, false);
  if (got != Acquired::kBusy || ticket.no_wait) return got;
  status({LaunchStatus::Kind::kWaiting, 0, ""});
  return acquire_gpus(store, job, ticket.inventory, false, &signals, false);
}

}  // namespace

int supervise_main(const SweepMain& sweep) {
  // Opened before the ticket comes where it exists (a sweep's spare supervisor, cell_spawner.h,
  // waits for its ticket: the open, the store's schema parsed, is then done before the cell
  // starts, not between its start and its exec). Not made for what is not a ticket.
  const std::string path = store::Store::default_path();
  std::unique_ptr<store::Store> store;
  std::error_code unreadable;  // then opened after the ticket, where its error is reported
  if (std::filesystem::exists(path, unreadable)) store = store::Store::open(path);
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  Ticket ticket;
  try {
    ticket = Ticket::from_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw Fatal("__supervise: stdin holds no ticket of nodus's (" + std::string(e.what()) +
                "): `nodus run --detach` and `nodus sweep` start it, not a user");
  }
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
  StatusWriter status;
  if (ticket.sweep_id != 0) {
    store.reset();  // the sweep opens its own
    try {
      return sweep(ticket,
                   [&status](const std::string& line) { status.send(parse_status_line(line)); });
    } catch (const Fatal& e) {
      status.error(e.code(), e.what());
      return e.code();
    }
  }
  SignalWatch signals;
  if (!store) store = store::Store::open(path);
  return supervise_job(ticket, *store, signals, nullptr,
                       [&status](const LaunchStatus& line) { status.send(line); });
}

int supervise_job(const Ticket& ticket, store::Store& store, SignalWatch& signals,
                  backend::Backend* backend,
                  const std::function<void(const LaunchStatus&)>& status) {
  auto error = [&status](int code, const std::string& message) {
    status({LaunchStatus::Kind::kError, code, message});
  };
  auto found = store.job(ticket.job_id);
  if (!found) {
    error(exit_code::kNodusError, "job " + std::to_string(ticket.job_id) + " not found");
    return exit_code::kNodusError;
  }
  JobRecord job = *found;
  if (!ticket.argv.empty()) job.argv = ticket.argv;  // the store's is redacted
  job.supervisor_pid = getpid();
  job.supervisor_start = store::process_start_time(job.supervisor_pid);
  // Seen as this supervisor's while it waits for GPUs; a job that need not wait (a sweep's cell,
  // whose GPUs the sweep claimed) is written once, as starting.
  const bool claimed = job.gpu_count == 0 || job.backend != "local" ||
                       static_cast<int>(job.gpu_indices.size()) == job.gpu_count;
  if (!claimed) store.update_job(job);

  switch (Acquired got = claim_gpus(store, job, ticket, signals, status)) {
    case Acquired::kClaimed:
      break;
    case Acquired::kBusy:
      end_unstarted(store, job, got, 0);
      error(exit_code::kNodusError, "--no-wait: not enough free " + job.gpu_type +
                                        " GPUs right now (job " + std::to_string(job.id) +
                                        " not started)");
      return exit_code::kNodusError;
    case Acquired::kInterrupted:
      end_unstarted(store, job, got, signals.take().value_or(SIGTERM));
      return exit_status_for(job);
  }
  move_job(job, JobState::kStarting);
  store.update_job(job);

  std::unique_ptr<backend::Backend> made;
  if (!backend) backend = (made = backend::make_backend(job.backend)).get();
  Supervisor supervisor(store, *backend);
  SuperviseRun run;
  run.options = SuperviseOptions::from_json(*job.options);
  run.attach = false;
  run.env = ticket.env;
  run.signals = &signals;
  if (ticket.sweep_cell) run.sweep_pid = ticket.parent_pid;
  run.on_launched = [&status, &error](const JobRecord&, const std::string& failure) {
    if (failure.empty())
      status({LaunchStatus::Kind::kRunning, 0, ""});
    else
      error(exit_code::kNodusError, failure);
  };
  try {
    return supervisor.run(job, run);
  } catch (const Fatal& e) {
    error(e.code(), e.what());
    return e.code();
  }
}

}  // namespace nodus::engine
