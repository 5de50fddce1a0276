#include "engine/sweep_session.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/config.h"
#include "core/error.h"
#include "engine/reconcile.h"
#include "engine/signals.h"
#include "engine/sweep_progress.h"

namespace nodus::engine {
namespace {

// How long past its grace a resume waits for a dead sweep's cell to record its end.
constexpr std::chrono::milliseconds kCellSettleSlack{10'000};

}  // namespace

std::string sweep_label(const store::SweepRecord& sweep) {
  std::string id = "s" + std::to_string(sweep.id);
  return sweep.name.empty() ? id : id + " (" + sweep.name + ")";
}

store::SweepRecord resumable_sweep(store::Store& store, const std::string& id_or_name) {
  auto resumed = store.find_sweep(id_or_name);
  if (!resumed) throw Fatal("--resume: unknown sweep '" + id_or_name + "': see nodus sweeps");
  if (!resumed->damaged.empty())
    throw Fatal("--resume " + sweep_label(*resumed) + ": " + resumed->damaged +
                "; it cannot be resumed: run the sweep's command again");
  if (resumed->state == "running" &&
      store::process_alive(resumed->supervisor_pid, resumed->supervisor_start))
    throw Fatal("--resume " + sweep_label(*resumed) + ": the sweep is still running (pid " +
                std::to_string(resumed->supervisor_pid) + "); nodus stop " + id_or_name +
                " first, or nodus wait " + id_or_name);
  // Its cells may still be stopping (the sweep died first): their bills are not in yet.
  auto stopping = wait_for_sweep_cells(store, resumed->id, kCellSettleSlack);
  if (!stopping.empty())
    throw Fatal("--resume " + sweep_label(*resumed) + ": job " + std::to_string(stopping.front()) +
                " of the sweep is still being stopped by its supervisor; nodus wait " +
                std::to_string(stopping.front()) + ", then resume");
  return *resumed;
}

std::string run_sweep(store::Store& store, store::SweepRecord& sweep,
                      std::vector<PlannedCell>& cells, const SweepSettings& settings, bool live,
                      const std::function<void()>& supervised) {
  sweep.state = "running";
  sweep.ended_at.reset();
  sweep.supervisor_pid = getpid();
  sweep.supervisor_start = store::process_start_time(sweep.supervisor_pid);
  if (sweep.id != 0)
    store.update_sweep(sweep);
  else
    sweep.id = store.insert_sweep(sweep);
  if (supervised) supervised();
  for (auto& c : cells)
    if (!c.done)
      c.job.name = (sweep.name.empty() ? "s" + std::to_string(sweep.id) : sweep.name) + "-" +
                   std::to_string(c.index + 1);
  SignalWatch signals;
  SweepProgress progress(sweep_label(sweep), live, live && use_color(2));
  SweepRunner runner(store, signals, progress);
  std::string state = runner.run(sweep, cells, settings);
  sweep.state = state;
  sweep.ended_at = unix_now();
  store.update_sweep(sweep);
  return state;
}

void detach_sweep(store::Store& store, store::SweepRecord& sweep, Ticket ticket) {
  sweep.state = "starting";
  sweep.ended_at.reset();
  sweep.supervisor_pid = 0;
  sweep.supervisor_start = 0;
  if (sweep.id != 0)
    store.update_sweep(sweep);
  else
    sweep.id = store.insert_sweep(sweep);
  ticket.sweep_id = sweep.id;
  auto spawned = value_or_throw(spawn_supervisor(ticket));
  const LaunchStatus status = parse_status_line(read_status_line(spawned.status_fd));
  close(spawned.status_fd);
  if (status.kind == LaunchStatus::Kind::kRunning) return;
  sweep.state = "failed";
  sweep.ended_at = unix_now();
  store.update_sweep(sweep);
  if (status.kind == LaunchStatus::Kind::kError) throw Fatal(status.message, status.code);
  throw Fatal("the supervisor of sweep s" + std::to_string(sweep.id) +
              " exited before starting it");
}

std::string sweep_log_path(store::Store& store, int64_t sweep_id) {
  return store.folder() + "/logs/sweep-" + std::to_string(sweep_id) + ".log";
}

int sweep_exit_code(const std::string& state) {
  if (state == "completed") return 0;
  if (state == "interrupted") return exit_code::kInterrupted;
  if (state == "stopped") return exit_code::kStopped;
  if (state == "budget" || state == "cost-cap") return exit_code::kCostCap;
  if (state == "timeout") return exit_code::kTimeout;
  if (state == "lost") return exit_code::kNodusError;  // its nodus process died
  return 1;
}

}  // namespace nodus::engine
