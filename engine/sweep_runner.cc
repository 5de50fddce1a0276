#include "engine/sweep_runner.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "core/error.h"
#include "engine/signals.h"
#include "engine/supervisor_process.h"
#include "engine/sweep_progress.h"

namespace nodus::engine {
namespace {

struct Running {
  size_t cell = 0;
  pid_t pid = -1;
  int pidfd = -1;
  double reserved = 0;
};

int pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

int default_parallel(const JobRecord& cell, const Inventory* inventory) {
  if (cell.backend != "local") return 1 << 20;
  if (cell.gpu_count == 0 || inventory == nullptr) return 1;
  int have = 0;
  for (const auto& g : inventory->gpus) have += g.type == cell.gpu_type;
  return std::max(1, have / cell.gpu_count);
}

std::string SweepRunner::run(store::SweepRecord& sweep, std::vector<PlannedCell>& cells,
                             const SweepSettings& settings) {
  BudgetLedger ledger(settings.budget);
  // A resumed sweep has spent what every earlier attempt of every cell cost, not only the cells
  // that completed: the budget covers the sweep, however many times it was resumed.
  if (sweep.id != 0) ledger.add_spent(store_.sweep_spent(sweep.id));
  progress_.begin(cells, settings.budget);

  std::vector<size_t> pending;
  for (size_t i = 0; i < cells.size(); ++i)
    if (!cells[i].done) pending.push_back(i);
  std::vector<Running> running;
  bool interrupted = false;
  bool budget_skips = false;
  const pid_t self = getpid();
  const int64_t self_start = store::process_start_time(self);

  // Starts what fits now, in cell order; a cell that does not fit does not hold back later
  // cells that do (no idle GPU while a cell that fits waits). Returns true if a cell waits for
  // GPUs held outside this sweep.
  auto start_what_fits = [&]() {
    bool waiting_for_gpus = false;
    for (auto it = pending.begin(); it != pending.end() && !interrupted;) {
      if (static_cast<int>(running.size()) >= settings.parallel) break;
      PlannedCell& cell = cells[*it];
      JobRecord& job = cell.job;
      auto worst = worst_case_cost(job.gpu_count, job.rate_per_gpu_hour, job.max_cost,
                                   job.timeout_ms, job.grace_ms);
      auto decision = ledger.try_reserve(worst, !running.empty());
      if (!decision.grant) {
        if (decision.refusal == BudgetLedger::Refusal::kNever) {
          cell.skipped = true;
          budget_skips = true;
          std::string left = format_usd(ledger.left().value_or(0));
          progress_.cell_skipped(cell, "its worst case " +
                                           (worst ? format_usd(*worst) : "(unbounded)") +
                                           " exceeds the " + left + " left of the budget");
          if (job.id != 0) {
            job.state = JobState::kBudget;
            job.ended_at = unix_now();
            job.note = "not started: the sweep's budget could not cover its worst case";
            store_.update_job(job);
          }
          it = pending.erase(it);
          continue;
        }
        ++it;
        continue;
      }
      if (job.id == 0) {
        job.sweep_id = sweep.id;
        job.supervisor_pid = self;
        job.supervisor_start = self_start;
        if (decision.grant->cap) {
          auto opts = job.options;
          opts["budget_cap"] = *decision.grant->cap;
          job.options = opts;
        }
        insert_job(store_, job);
      } else if (decision.grant->cap) {
        job.options["budget_cap"] = *decision.grant->cap;
        store_.update_job(job);
      }
      if (job.gpu_count > 0 && job.backend == "local") {
        auto got = store_.claim_gpus(job.id, job.gpu_type, job.gpu_count, settings.inventory->gpus,
                                     self, self_start);
        if (!got) {
          ledger.settle(decision.grant->reserved, 0);
          waiting_for_gpus = true;
          ++it;
          continue;
        }
        job.gpu_indices = *got;
      }
      job.state = JobState::kStarting;
      store_.update_job(job);
      Ticket ticket;
      ticket.job_id = job.id;
      ticket.env = cell.env;
      ticket.sweep_cell = true;
      ticket.parent_pid = self;
      if (settings.inventory) ticket.inventory = *settings.inventory;
      auto spawned = spawn_supervisor(ticket);
      if (!spawned) {
        store_.release_gpus(job.id);
        throw Fatal(spawned.error());
      }
      close(spawned->status_fd);
      Running r{*it, spawned->pid, pidfd_open(spawned->pid), decision.grant->reserved};
      running.push_back(r);
      progress_.cell_started(cell, job);
      it = pending.erase(it);
    }
    return waiting_for_gpus;
  };

  while (!pending.empty() || !running.empty()) {
    bool waiting_for_gpus = start_what_fits();
    if (running.empty() && (pending.empty() || interrupted)) break;
    std::vector<pollfd> fds;
    fds.push_back({signals_.fd(), POLLIN, 0});
    for (const auto& r : running) fds.push_back({r.pidfd, POLLIN, 0});
    int timeout = progress_.live() ? 1000 : -1;
    if (waiting_for_gpus) timeout = 250;
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) throw Fatal(std::string("poll: ") + std::strerror(errno));
    if (fds[0].revents & POLLIN) {
      while (auto sig = signals_.take()) {
        if (!interrupted)
          std::fprintf(
              stderr,
              "\nnodus: stopping the sweep: running cells get SIGTERM, finished cells are kept\n");
        interrupted = true;
        for (const auto& r : running) ::kill(r.pid, *sig == SIGINT ? SIGINT : SIGTERM);
      }
    }
    for (size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & POLLIN)) continue;
      const int fd = fds[k].fd;
      auto it = std::find_if(running.begin(), running.end(),
                             [fd](const Running& r) { return r.pidfd == fd; });
      int status = 0;
      waitpid(it->pid, &status, 0);
      close(it->pidfd);
      PlannedCell& cell = cells[it->cell];
      store_.release_gpus(cell.job.id);  // in case its supervisor died before releasing them
      store_.reconcile_dead_supervisors();
      if (auto fresh = store_.job(cell.job.id)) cell.job = *fresh;
      ledger.settle(it->reserved, cell.job.cost);
      progress_.cell_ended(cell, cell.job);
      running.erase(it);
    }
    double spent = ledger.spent();
    progress_.tick(cells, spent);
  }
  progress_.end();
  for (size_t i : pending) {  // attempts that waited for GPUs and never started
    JobRecord& job = cells[i].job;
    if (job.id == 0 || is_final(job.state)) continue;
    job.state = JobState::kCancelled;
    job.ended_at = unix_now();
    job.note = "not started: the sweep was stopped while it waited for GPUs";
    store_.release_gpus(job.id);
    store_.update_job(job);
  }

  if (interrupted) return "interrupted";
  bool all_completed = std::all_of(cells.begin(), cells.end(), [](const PlannedCell& c) {
    return c.done || c.job.state == JobState::kCompleted;
  });
  if (all_completed) return "completed";
  bool budget_stops = std::any_of(cells.begin(), cells.end(), [](const PlannedCell& c) {
    return c.job.state == JobState::kBudget;
  });
  return budget_skips || budget_stops ? "budget" : "failed";
}

}  // namespace nodus::engine
