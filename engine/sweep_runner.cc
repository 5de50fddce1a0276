#include "engine/sweep_runner.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "backend/backend.h"
#include "core/cost.h"
#include "core/error.h"
#include "core/lifecycle.h"
#include "core/parse.h"
#include "core/pidfd.h"
#include "core/proc.h"
#include "core/timing.h"
#include "engine/cell_order.h"
#include "engine/cell_spawner.h"
#include "engine/duration_model.h"
#include "engine/reconcile.h"
#include "engine/signals.h"
#include "engine/supervisor_process.h"
#include "engine/sweep_losers.h"
#include "engine/sweep_progress.h"
#include "engine/sweep_scheduler.h"
#include "store/gpu_locks.h"
#include "store/gpu_queue.h"
#include "store/job_stats.h"

namespace nodus::engine {
namespace {

struct Running {
  size_t cell = 0;
  pid_t pid = -1;
  int pidfd = -1;
  std::optional<LoserVerdict> loser;  // --stop-early sent it SIGTERM
};

double usd_per_s(const JobRecord& job) {
  return usd_per_second(job.gpu_count, job.rate_per_gpu_hour);
}

// --stop-early: judges each running cell past its warm-up against the best finished cell and
// stops those clearly worse (their supervisors record the stop; the runner adds why).
void stop_losers(store::Store& store, const std::vector<PlannedCell>& cells,
                 std::vector<Running>& running, const SweepSettings& settings) {
  std::optional<double> best;
  std::string best_label;
  double best_work = 0;  // samples the best cell did in its steady state and beyond
  for (const auto& c : cells) {
    if (c.job.id == 0 || c.job.state != JobState::kCompleted) continue;
    auto stats = store.stats(c.job.id);
    if (!stats || !stats->values.contains("throughput") || !stats->values["throughput"].is_number())
      continue;
    double thr = stats->values["throughput"].get<double>();
    if (thr <= 0) continue;
    double ps = per_sample(usd_per_s(c.job), thr);
    if (!best || ps < *best) {
      best = ps;
      best_label = c.label;
      best_work =
          c.job.started_at && c.job.ended_at ? thr * (*c.job.ended_at - *c.job.started_at) : 0;
    }
  }
  if (!best) return;
  for (auto& r : running) {
    if (r.loser) continue;
    const JobRecord& job = cells[r.cell].job;
    auto thr =
        running_throughput(store.metrics(job.id), settings.throughput_metric, settings.warmup_s);
    if (!thr) continue;
    auto verdict = judge_running_cell(per_sample(usd_per_s(job), *thr), *best, *settings.stop_early,
                                      best_label);
    if (!verdict) continue;
    double elapsed = job.started_at ? unix_now() - *job.started_at : 0;
    verdict->saved_s = remaining_seconds(best_work, *thr, elapsed);
    r.loser = verdict;
    ::kill(r.pid, SIGTERM);
  }
}

// Records why a loser stopped and what finishing would have cost: the best cell's work at the
// loser's own pace (LoserVerdict::saved_s) at its rate, never more than its worst case left.
void record_loser(store::Store& store, PlannedCell& cell, const LoserVerdict& verdict) {
  JobRecord& job = cell.job;
  double saved = usd_per_s(job) * verdict.saved_s;
  auto worst = worst_case_cost(job.gpu_count, job.rate_per_gpu_hour, job.max_cost, job.timeout_ms,
                               job.grace_ms);
  if (worst) saved = std::min(saved, std::max(0.0, *worst - job.cost));
  job.note = verdict.note + "; finishing the best cell's work at its pace would have taken about " +
             format_duration(Millis(static_cast<long long>(verdict.saved_s * 1000))) + " and " +
             format_usd(saved) + " more";
  store.update_job(job);
  store::JobStats stats;
  stats.job_id = job.id;
  stats.values["stopped_early"] = {
      {"ratio", verdict.ratio}, {"saved_usd", saved}, {"saved_s", verdict.saved_s}};
  store.put_stats(stats);
  cell.stopped_early = true;
}

}  // namespace

int default_parallel(const JobRecord& cell, const Inventory* inventory) {
  if (cell.backend != "local") return 1 << 20;
  if (cell.gpu_count == 0 || inventory == nullptr) return 1;
  int have = 0;
  for (const auto& g : inventory->gpus) have += g.type == cell.gpu_type;
  return std::max(1, have / cell.gpu_count);
}

namespace {

// Starts cells for the scheduler: writes the job row (with the budget's cap), claims the GPUs,
// spawns the cell's supervisor and keeps what the loop needs to wait for it.
class CellLauncher : public SweepScheduler::Launcher {
 public:
  CellLauncher(store::Store& store, SweepProgress& progress, store::SweepRecord& sweep,
               std::vector<PlannedCell>& cells, const SweepSettings& settings)
      : store_(store), progress_(progress), sweep_(sweep), cells_(cells), settings_(settings) {}

  Outcome start(size_t index, const BudgetLedger::Grant& grant) override {
    PlannedCell& cell = cells_[index];
    JobRecord& job = cell.job;
    if (job.id == 0) {
      job.sweep_id = sweep_.id;
      job.supervisor_pid = self_;
      job.supervisor_start = self_start_;
      if (grant.cap) {
        auto opts = job.options;
        (*opts)["budget_cap"] = *grant.cap;
        job.options = opts;
      }
      insert_job(store_, job);
      timing::step("cell: job inserted");
    } else if (grant.cap) {
      (*job.options)["budget_cap"] = *grant.cap;
      store_.update_job(job);
    }
    if (job.gpu_count > 0 && job.backend == "local") {
      auto got = store_.claim_gpus(job.id, job.gpu_type, job.gpu_count, settings_.inventory->gpus,
                                   self_, self_start_, queued ? &*queued : nullptr);
      if (!got) return Outcome::kGpusBusy;
      job.gpu_indices = *got;
      timing::step("cell: GPUs claimed");
    }
    move_job(job, JobState::kStarting);
    store_.update_job(job);
    Ticket ticket;
    ticket.job_id = job.id;
    ticket.env = cell.env;
    ticket.argv = job.argv;  // the real one: the store keeps it redacted (core/secret.h)
    ticket.sweep_cell = true;
    ticket.parent_pid = self_;
    if (settings_.inventory) ticket.inventory = *settings_.inventory;
    auto spawned = settings_.spawn ? settings_.spawn(ticket) : spawner_.spawn(ticket);
    if (!spawned) {
      store_.release_gpus(job.id);
      throw Fatal(spawned.error());
    }
    timing::step("cell: supervisor spawned");
    if (spawned->status_fd >= 0) close(spawned->status_fd);
    running.push_back({index, spawned->pid, pidfd_open(spawned->pid), std::nullopt});
    ++launched;
    progress_.cell_started(cell, job);
    return Outcome::kStarted;
  }

  void skip(size_t index, std::optional<double> worst, double left) override {
    PlannedCell& cell = cells_[index];
    JobRecord& job = cell.job;
    cell.skipped = true;
    progress_.cell_skipped(cell, "its worst case " + (worst ? format_usd(*worst) : "(unbounded)") +
                                     " exceeds the " + format_usd(left) + " left of the budget");
    if (job.id != 0) {  // an attempt that waited for GPUs in an earlier run
      end_job(job, {JobState::kBudget, unix_now(), std::nullopt,
                    "not started: the sweep's budget could not cover its worst case"});
      store_.update_job(job);
    }
  }

  // Spares for the cells still to start (cell_spawner.h), at most kSpares; none with a test's
  // spawn.
  void top_up_spares(size_t pending) {
    if (!settings_.spawn) spawner_.top_up(std::min(pending, kSpares));
  }
  bool spares_short(size_t pending) const {
    return !settings_.spawn && spawner_.spares() < std::min(pending, kSpares);
  }

  std::vector<Running> running;
  size_t launched = 0;
  std::optional<store::GpuWaiter> queued;  // the sweep's place in the machine's GPU queue

 private:
  // Two: cells often end close together; each spare is one idle process.
  static constexpr size_t kSpares = 2;
  CellSpawner spawner_;
  store::Store& store_;
  SweepProgress& progress_;
  store::SweepRecord& sweep_;
  std::vector<PlannedCell>& cells_;
  const SweepSettings& settings_;
  const pid_t self_ = getpid();
  const int64_t self_start_ = store::process_start_time(self_);
};

// Sweeps of more cells keep the order they were queued in: each refit reads every ended cell.
constexpr size_t kMostCellsToReorder = 20'000;

// When to refit as cells end: at each end while few have ended, then each time 5% more have,
// so a sweep of many cells refits about a hundred times, not once a cell.
bool refit_due(size_t ended, size_t fitted_at) {
  return ended <= 256 || ended * 20 >= fitted_at * 21;
}

// Each cell's parameter values (in the order of the params object's keys, the same for every
// cell) and its duration where known: measured in an earlier run of this sweep, or known from
// the store for its shape.
ParamCell param_cell(const PlannedCell& cell, std::optional<double> known) {
  ParamCell out;
  if (cell.job.params->is_object())
    for (const auto& [name, value] : cell.job.params->items())
      out.values.push_back(value.is_string() ? value.get<std::string>() : value.dump());
  out.seconds = cell.done ? measured_duration(cell.job) : known;
  return out;
}

// Queues the cells not done yet, longest first or in the order of a plan for `lanes` at once
// where earlier runs of the same cells tell how long they take (cell_order.h), each with the
// most it can cost. Returns what each cell is known to take, for the order to change as cells
// end (DurationModel); `adaptive` is set when that may help: several cells run at once and a
// pending cell's duration is unknown.
std::vector<ParamCell> queue_cells(store::Store& store, SweepScheduler& scheduler,
                                   const store::SweepRecord& sweep,
                                   const std::vector<PlannedCell>& cells, int lanes,
                                   const Inventory* inventory, bool& adaptive) {
  const auto known =
      known_durations(store, sweep.argv, sweep.backend,
                      sweep.id != 0 ? std::optional<int64_t>(sweep.id) : std::nullopt);
  std::vector<CellEstimate> estimates;
  std::vector<ParamCell> facts;
  std::set<std::string> types;
  adaptive = false;
  for (size_t i = 0; i < cells.size(); ++i) {
    const JobRecord& job = cells[i].job;
    auto it = known.find({job.argv, job.gpu_type, job.gpu_count});
    const auto seconds = it == known.end() ? std::nullopt : std::optional<double>(it->second);
    facts.push_back(param_cell(cells[i], seconds));
    if (cells[i].done) continue;
    adaptive = adaptive || !seconds;
    estimates.push_back({i, seconds, std::max(1, job.gpu_count)});
    types.insert(job.gpu_count > 0 ? job.gpu_type : "");
  }
  adaptive = adaptive && lanes > 1 && cells.size() <= kMostCellsToReorder;
  // The GPUs the cells share, for a plan of cells of different widths: those of the one type
  // they all claim on this machine (none to plan with for CPU cells, a mix of types or Slurm).
  int gpus = 0;
  if (inventory != nullptr && types.size() == 1 && !types.begin()->empty())
    for (const auto& g : inventory->gpus) gpus += g.type == *types.begin();
  for (size_t i : order_cells(estimates, lanes, gpus)) {
    const JobRecord& job = cells[i].job;
    GpuRequest claims;
    if (job.gpu_count > 0 && job.backend == "local") claims = {job.gpu_type, job.gpu_count};
    scheduler.add_pending(i,
                          worst_case_cost(job.gpu_count, job.rate_per_gpu_hour, job.max_cost,
                                          job.timeout_ms, job.grace_ms),
                          claims);
  }
  return facts;
}

// A stop of the sweep (SIGINT, SIGTERM): no cell starts any more, running cells get the signal
// through their supervisors, and orphaned cluster jobs a SIGTERM from the cluster.
void pass_on_stop(int sig, SweepScheduler& scheduler, SweepStop& stop,
                  const std::vector<Running>& running, const std::vector<size_t>& orphans,
                  std::vector<PlannedCell>& cells) {
  if (stop == SweepStop::kNone)
    stop = sig == SIGTERM ? SweepStop::kStopped : SweepStop::kInterrupted;
  if (!scheduler.stopped())
    std::fprintf(
        stderr,
        "\nnodus: stopping the sweep: running cells get SIGTERM, finished cells are kept\n");
  scheduler.stop();
  for (const auto& r : running) ::kill(r.pid, sig == SIGINT ? SIGINT : SIGTERM);
  for (size_t o : orphans) {  // no supervisor to pass the stop on: ask the cluster
    JobRecord& job = cells[o].job;
    if (auto b = backend::make_backend(job.backend); b) (void)b->signal(job, SIGTERM);
  }
}

// A cell whose supervisor is stopped (its job sent it SIGSTOP) never exits of its own accord, and
// the sweep would wait on it for ever. Looked at each pass: settled as any nodus command settles
// it (reconcile: ended once its sentinel killed the job, or past its deadline; the supervisor
// is killed, so its pidfd wakes the loop); while the sweep stops, ended at once, since nothing
// else will pass the stop on.
void settle_stopped_cells(store::Store& store, const std::vector<Running>& running,
                          const std::vector<PlannedCell>& cells, bool stopping) {
  bool any = false;
  for (const auto& r : running) {
    if (!process_stopped(r.pid)) continue;
    any = true;
    if (!stopping) continue;
    auto job = store.job(cells[r.cell].job.id);
    if (job && !is_final(job->state))
      force_end(store, *job, JobState::kStopped,
                "stopped with its sweep: its supervisor (pid " + std::to_string(r.pid) +
                    ") was stopped, so the sweep killed the job itself");
    ::kill(r.pid, SIGKILL);  // should the record not name it yet
  }
  if (any && !stopping) reconcile(store);
}

// Attempts that waited for GPUs and never started: cancelled, their claims released.
void cancel_unstarted(store::Store& store, const SweepScheduler& scheduler,
                      std::vector<PlannedCell>& cells, SweepStop stop) {
  // As a job waiting for GPUs is ended: stopped by `nodus stop` (SIGTERM), cancelled by Ctrl-C.
  const bool stopped = stop == SweepStop::kStopped;
  for (size_t i : scheduler.pending()) {  // attempts that waited for GPUs and never started
    JobRecord& job = cells[i].job;
    if (job.id == 0 || is_final(job.state)) continue;
    end_job(job, {stopped ? JobState::kStopped : JobState::kCancelled, unix_now(),
                  stopped ? exit_code::kStopped : exit_code::kInterrupted,
                  stopped ? "not started: the sweep was stopped while it waited for GPUs"
                          : "not started: the sweep was interrupted while it waited for GPUs"});
    store.release_gpus(job.id);
    store.update_job(job);
  }
}

}  // namespace

std::string SweepRunner::run(store::SweepRecord& sweep, std::vector<PlannedCell>& cells,
                             const SweepSettings& settings) {
  SweepScheduler scheduler(settings.budget, settings.parallel);
  // A resumed sweep has spent what every earlier attempt of every cell cost, not only the cells
  // that completed: the budget covers the sweep, however many times it was resumed.
  if (sweep.id != 0) scheduler.add_done(store_.sweep_spent(sweep.id));
  bool adaptive = false;
  auto facts =
      queue_cells(store_, scheduler, sweep, cells, settings.parallel, settings.inventory, adaptive);
  // Under a --budget the order decides which cells the money reaches: the grid's, as asked,
  // not the long (dear) ones first.
  adaptive = adaptive && !settings.budget;
  progress_.begin(cells, settings.budget);
  CellLauncher launcher(store_, progress_, sweep, cells, settings);
  auto& running = launcher.running;
  SweepStop stop = SweepStop::kNone;
  // Cells whose supervisor died while their job runs on in a cluster (the node's enforcer keeps
  // it capped): each keeps its slot and its share of the budget until the cluster says the job
  // ended, so no other cell spends what the orphan may still spend. A local job is never one:
  // reconcile kills what a dead supervisor left and records it.
  std::vector<size_t> orphans;
  auto settle_orphans = [&] {
    if (orphans.empty()) return;
    reconcile(store_);  // refreshes, from the cluster, the jobs nobody supervises
    for (auto o = orphans.begin(); o != orphans.end();) {
      PlannedCell& cell = cells[*o];
      if (auto fresh = store_.job(cell.job.id)) cell.job = *fresh;
      if (!is_final(cell.job.state)) {
        ++o;
        continue;
      }
      scheduler.ended(*o, cell.job.cost);
      progress_.cell_ended(cell, cell.job);
      o = orphans.erase(o);
    }
  };

  // Spares start once the cells just started had a moment to start (they share the CPUs).
  using Clock = std::chrono::steady_clock;
  constexpr auto kSpareDelay = std::chrono::milliseconds(30);
  Clock::time_point spares_at{};
  size_t launched = 0;
  // Waiting for GPUs another process holds: woken when a lock file changes (a release), and
  // looking again every settings.gpu_recheck for a holder that died without one. Watching from
  // before the first look: a release between a look and the wait is not missed.
  std::optional<store::GpuReleaseWatch> releases;
  if (settings.inventory) releases.emplace();
  // Cells done in an earlier run (--resume) already say something: fitted before the first start.
  bool reorder = adaptive;  // a cell ended whose duration tells something about the pending ones
  bool told = false;        // the note that the order follows the estimates was printed
  size_t ended = 0, fitted_at = 0;
  while (true) {
    if (reorder && refit_due(ended, fitted_at) && !scheduler.pending().empty()) {
      auto next = order_by_estimate(facts, scheduler.pending());
      if (next.adjusted_r2 && !told && next.order != scheduler.pending()) {
        told = true;
        progress_.note("starts the cells that look longest first: the params of the " +
                       std::to_string(next.ended) + " that ended explain " +
                       std::to_string(static_cast<int>(*next.adjusted_r2 * 100)) +
                       "% of how long they took (adjusted R^2)");
      }
      scheduler.reorder(next.order);
      fitted_at = ended;
      reorder = false;
    }
    bool waiting_for_gpus = scheduler.start_what_fits(launcher);
    if (scheduler.finished()) break;
    // While a cell waits for GPUs the sweep holds a place in the machine's queue, so that
    // claims made after it (another sweep's 1-GPU cells, say) leave it what it waits for.
    if (const auto& wanted = scheduler.waiting_for(); wanted && settings.inventory) {
      if (!launcher.queued)
        launcher.queued.emplace(wanted->type, wanted->count,
                                "sweep s" + std::to_string(sweep.id) + " of " + store_.path());
      else
        launcher.queued->want(wanted->type, wanted->count);
    } else {
      launcher.queued.reset();
    }
    const size_t pending = scheduler.stopped() ? 0 : scheduler.pending().size();
    if (launcher.launched != launched) spares_at = Clock::now() + kSpareDelay;
    launched = launcher.launched;
    std::vector<pollfd> fds;
    fds.push_back({signals_.fd(), POLLIN, 0});
    for (const auto& r : running) fds.push_back({r.pidfd, POLLIN, 0});
    // Once a second while cells run: one whose supervisor was stopped wakes nothing.
    int timeout =
        progress_.live() || settings.stop_early || !orphans.empty() || !running.empty() ? 1000 : -1;
    if (waiting_for_gpus) {
      const int recheck = static_cast<int>(settings.gpu_recheck.count());
      timeout = timeout < 0 ? recheck : std::min(timeout, recheck);
      if (releases && releases->fd() >= 0) fds.push_back({releases->fd(), POLLIN, 0});
    }
    if (launcher.spares_short(pending)) {
      const auto now = Clock::now();
      if (now >= spares_at) {
        launcher.top_up_spares(pending);
      } else {
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(spares_at - now).count();
        timeout = timeout < 0 ? static_cast<int>(ms) : std::min(timeout, static_cast<int>(ms));
      }
    }
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) throw Fatal(std::string("poll: ") + std::strerror(errno));
    if (fds[0].revents & POLLIN) {
      while (auto sig = signals_.take())
        pass_on_stop(*sig, scheduler, stop, running, orphans, cells);
    }
    if (releases) releases->drain();  // the next look sees what changed
    for (size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & POLLIN)) continue;
      const int fd = fds[k].fd;
      if (releases && fd == releases->fd()) continue;
      auto it = std::find_if(running.begin(), running.end(),
                             [fd](const Running& r) { return r.pidfd == fd; });
      timing::step("cell: supervisor exited");
      int status = 0;
      waitpid(it->pid, &status, 0);
      close(it->pidfd);
      PlannedCell& cell = cells[it->cell];
      store_.release_gpus(cell.job.id);  // in case its supervisor died before releasing them
      if (auto fresh = store_.job(cell.job.id)) cell.job = *fresh;
      // A supervisor that died leaves its job to its sentinel; one whose sentinel died too (the
      // job killed both) leaves it running: reconcile kills what is left of its cgroup. One that
      // exited after recording its job's end left nothing to settle.
      if (!(WIFEXITED(status) && is_final(cell.job.state))) {
        reconcile(store_);
        if (auto fresh = store_.job(cell.job.id)) cell.job = *fresh;
      }
      if (!is_final(cell.job.state) && cell.job.backend != "local") {
        std::fprintf(stderr,
                     "nodus: cell %d [%s]: its supervisor ended while job %lld still runs on %s; "
                     "its share of the budget stays held until %s says it ended\n",
                     cell.index + 1, cell.label.c_str(), static_cast<long long>(cell.job.id),
                     cell.job.backend.c_str(), cell.job.backend.c_str());
        orphans.push_back(it->cell);
        running.erase(it);
        continue;
      }
      if (it->loser && cell.job.state == JobState::kStopped) record_loser(store_, cell, *it->loser);
      if (auto d = measured_duration(cell.job); d && adaptive && !facts[it->cell].seconds) {
        facts[it->cell].seconds = d;
        ++ended;
        reorder = true;
      }
      scheduler.ended(it->cell, cell.job.cost);
      progress_.cell_ended(cell, cell.job);
      running.erase(it);
      timing::step("cell: end taken");
    }
    settle_orphans();
    settle_stopped_cells(store_, running, cells, scheduler.stopped());
    if (settings.stop_early && !scheduler.stopped()) stop_losers(store_, cells, running, settings);
    progress_.tick(cells, scheduler.ledger().spent());
  }
  progress_.end();
  cancel_unstarted(store_, scheduler, cells, stop);

  std::vector<JobState> states;
  // A loser stopped early did what was asked of it: it does not fail the sweep.
  for (const auto& c : cells)
    states.push_back(c.done || c.stopped_early ? JobState::kCompleted : c.job.state);
  return sweep_outcome(stop, scheduler.skipped_for_budget(), states);
}

}  // namespace nodus::engine
