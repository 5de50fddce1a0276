#include "engine/gpu_wait.h"

#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "core/error.h"
#include "core/lifecycle.h"
#include "core/parse.h"
#include "engine/signals.h"
#include "engine/stop_controller.h"
#include "store/gpu_locks.h"
#include "store/gpu_queue.h"

namespace nodus::engine {

std::string held_by_other_stores(const store::Store& store, const std::string& type,
                                 const Inventory& inventory) {
  std::string out;
  for (const auto& g : inventory.gpus) {
    if (g.type != type) continue;
    auto holder = store::gpu_holder(g.index);
    if (!holder ||
        (holder->store == store.path() && !holder->orphaned && !holder->lock_file_removed))
      continue;
    if (holder->lock_file_removed) {
      out += "; GPU " + std::to_string(g.index) + " is held (its lock file was removed)";
      continue;
    }
    out += "; GPU " + std::to_string(g.index) + " is held by job " +
           std::to_string(holder->job_id) + " of the store " +
           (holder->store.empty() ? "(unknown)" : holder->store);
    if (holder->orphaned)
      out += ": its nodus (pid " + std::to_string(holder->pid) +
             ") is gone but its processes still run in " + holder->cgroup +
             " (the next nodus command on that store ends them)";
    else
      out += " (pid " + std::to_string(holder->pid) + ")";
  }
  return out;
}

namespace {

// Who the GPUs that look free are kept for (store/gpu_queue.h), as a clause of the waiting line.
std::string first_in_line_note(const std::string& type, const Inventory& inventory) {
  int available = 0;
  for (const auto& g : inventory.gpus) available += to_lower(g.type) == to_lower(type);
  auto first = store::first_in_line(type, available, nullptr);
  if (!first) return "";
  return "; first in line: " + std::to_string(first->count) + " x " + first->type + " for " +
         (first->who.empty() ? "pid " + std::to_string(first->pid) : first->who);
}

}  // namespace

Acquired acquire_gpus(store::Store& store, JobRecord& job, const Inventory& inventory, bool no_wait,
                      SignalWatch* signals, bool attach) {
  if (job.gpu_count == 0) {
    move_job(job, JobState::kStarting);
    return Acquired::kClaimed;
  }
  const int64_t pid = getpid();
  const int64_t start = store::process_start_time(pid);
  bool said = false;
  // Woken when a GPU lock file changes (a release), looking again every 250 ms for a holder
  // that died without one; watching from before the look that precedes the first wait.
  std::optional<store::GpuReleaseWatch> releases;
  // In the machine's queue from the first look that failed: claims made after it leave it the
  // GPUs it needs (store/gpu_queue.h), so 1-GPU cells that keep taking each GPU as it frees do
  // not pass it over for good. It leaves the queue when it returns.
  std::optional<store::GpuWaiter> queued;
  for (;;) {
    if (auto got = store.claim_gpus(job.id, job.gpu_type, job.gpu_count, inventory.gpus, pid, start,
                                    queued ? &*queued : nullptr)) {
      job.gpu_indices = *got;
      move_job(job, JobState::kStarting);
      store.update_job(job);
      return Acquired::kClaimed;
    }
    if (no_wait) return Acquired::kBusy;
    if (!said && attach) {
      std::fprintf(stderr, "nodus: job %lld waiting for %d free %s GPU%s (Ctrl-C to give up)%s\n",
                   static_cast<long long>(job.id), job.gpu_count, job.gpu_type.c_str(),
                   job.gpu_count > 1 ? "s" : "",
                   (held_by_other_stores(store, job.gpu_type, inventory) +
                    first_in_line_note(job.gpu_type, inventory))
                       .c_str());
      said = true;
    }
    if (!releases) {
      releases.emplace();
      queued.emplace(job.gpu_type, job.gpu_count,
                     "job " + std::to_string(job.id) + " of " + store.path());
      continue;
    }
    pollfd p[2] = {{signals ? signals->fd() : -1, POLLIN, 0}, {releases->fd(), POLLIN, 0}};
    if (::poll(p, 2, 250) > 0 && (p[0].revents & POLLIN)) return Acquired::kInterrupted;
    releases->drain();
  }
}

void end_unstarted(store::Store& store, JobRecord& job, Acquired why, int signal) {
  if (why == Acquired::kBusy) {
    end_job(job, {JobState::kFailed, unix_now(), exit_code::kNodusError,
                  "not started: its GPUs were busy (--no-wait)"});
  } else {
    const JobState state = state_for_signal(signal);
    end_job(job, {state, unix_now(), std::nullopt,
                  state == JobState::kCancelled ? "not started: interrupted while waiting for GPUs"
                                                : "not started: stopped while waiting for GPUs"});
  }
  store.update_job(job);
}

}  // namespace nodus::engine
