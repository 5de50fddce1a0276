// engine::SweepRunner driving whole sweeps, without real jobs: each cell's supervisor is a
// process of its own, as in `nodus sweep`, forked and exec'd from the test
// (tests/tools/fake_supervisor.cc): the real supervise_job over a FakeBackend
// (tests/engine/fake_backend.h) scripted per cell. What runs
// for real is the runner's loop (its pidfds, reaping, signals and reconcile), the scheduler's
// budget, --stop-early's verdicts and the supervisors' caps and stops; what is faked is only the
// job (and the throughput it reports).
// Bounds on time and money are asserted from below only, or with the note nodus writes when it
// was late (a loaded machine makes nodus late, never early).

#include "engine/sweep_runner.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/lifecycle.h"
#include "core/strings.h"
#include "engine/signals.h"
#include "engine/supervise_options.h"
#include "engine/sweep_plan.h"
#include "engine/sweep_progress.h"
#include "fake_backend.h"
#include "store/gpu_locks.h"
#include "store/job_stats.h"
#include "store/store.h"
#include "sweep/grid.h"
#include "sweep/placeholders.h"
#include "temp_dir.h"

// A FakeBackend::Script is written with designated initializers, naming only what a test
// changes; GCC 12 warns of the members left to their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace nodus::engine {
namespace {

using testing::FakeBackend;
using Script = FakeBackend::Script;

// A cell's fake job: the FakeBackend's script, and the throughput it reports, if any, as a job
// does: `{"samples_per_sec": V}` lines appended to its NODUS_METRICS file every 50 ms.
struct CellScript {
  CellScript(Script fake = {}, std::optional<double> samples_per_sec = std::nullopt)
      : fake(fake), samples_per_sec(samples_per_sec) {}
  Script fake;
  std::optional<double> samples_per_sec;
};

// tests/tools/fake_supervisor.cc, built beside this test's executable.
std::string fake_supervisor() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "nodus_fake_supervisor";
}

// Cells `cell=1..n` of one H100 each at $3,600 an hour: a dollar a second.
class SweepRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = store::Store::open(home_.db()); }

  std::vector<PlannedCell> plan(int cells, std::optional<double> max_cost) {
    std::vector<std::string> values;
    for (int i = 1; i <= cells; ++i) values.push_back(std::to_string(i));
    return plan_grid({"cell=" + join(values, ",")}, max_cost);
  }

  // The cells of a grid (--param specs, the first axis outermost).
  std::vector<PlannedCell> plan_grid(const std::vector<std::string>& axes,
                                     std::optional<double> max_cost,
                                     const std::vector<std::string>& argv = {"train", "--cell",
                                                                             "{cell}"}) {
    JobRecord base;
    base.name = "fake";
    base.backend = "fake";
    base.gpu_type = "H100";
    base.gpu_count = 1;
    base.rate_per_gpu_hour = 3600;
    base.grace_ms = 200;
    base.max_cost = max_cost;
    base.created_at = unix_now();
    base.state = JobState::kWaiting;
    auto grid = sweep::parse_grid(axes);
    EXPECT_TRUE(grid.ok());
    auto tmpl = sweep::ArgvTemplate::parse(argv, *grid);
    EXPECT_TRUE(tmpl.ok());
    SweepPlanInput input;
    input.base = base;
    input.max_cost = max_cost;
    return plan_cells(input, *grid, *tmpl);
  }

  store::SweepRecord new_sweep(std::optional<double> budget) {
    store::SweepRecord sweep;
    sweep.name = "fake";
    sweep.backend = "fake";
    sweep.argv = {"train", "--cell", "{cell}"};
    sweep.definition_hash = "fake";
    sweep.budget = budget;
    sweep.created_at = unix_now();
    sweep.supervisor_pid = getpid();
    sweep.supervisor_start = store::process_start_time(getpid());
    sweep.id = store_->insert_sweep(sweep);
    return sweep;
  }

  // Runs the cells not done through the real runner; each cell's supervisor is a process of its
  // own (nodus_fake_supervisor) that runs the cell's job through a FakeBackend with
  // script(cell number, 1-based, in grid order). `on_spawn` is
  // called in the runner after each spawn with how many cells it has spawned so far.
  std::string run(
      store::SweepRecord& sweep, std::vector<PlannedCell>& cells, SweepSettings settings,
      std::function<CellScript(int)> script, std::function<void(int)> on_spawn = [](int) {}) {
    SignalWatch signals;  // blocks SIGINT/SIGTERM here; the forked supervisors inherit the mask
    SweepProgress progress("s" + std::to_string(sweep.id), false, false);
    SweepRunner runner(*store_, signals, progress);
    const std::string db = home_.db();
    const std::string helper = fake_supervisor();
    settings.spawn = [&](const Ticket& ticket) -> Result<SpawnedSupervisor> {
      const int cell = std::stoi(ticket.env.at("NODUS_SWEEP_CELL"));
      const CellScript s = script(cell);
      // Everything exec needs is made before the fork: the child only execs.
      const std::vector<std::string> args = {helper,
                                             db,
                                             ticket.to_json(),
                                             std::to_string(s.fake.runs_for),
                                             std::to_string(s.fake.exit_code),
                                             s.fake.ignores_term ? "1" : "0",
                                             std::to_string(s.samples_per_sec.value_or(-1))};
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      const pid_t parent = getpid();
      const pid_t pid = ::fork();
      if (pid < 0) return Error::permanent("fork failed");
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);  // as a real cell: it dies with its sweep
        if (getppid() == parent) ::execv(argv[0], argv.data());
        _exit(exit_code::kNodusError);
      }
      spawned_.push_back(cell);
      on_spawn(static_cast<int>(spawned_.size()));
      return SpawnedSupervisor{pid, -1};
    };
    return runner.run(sweep, cells, settings);
  }

  std::vector<JobRecord> jobs_of(const store::SweepRecord& sweep) {
    auto jobs = store_->sweep_cells(sweep.id);
    std::sort(jobs.begin(), jobs.end(),
              [](const JobRecord& a, const JobRecord& b) { return a.cell_index < b.cell_index; });
    return jobs;
  }

  static bool late(const JobRecord& job) {
    return job.note.find("past its cap") != std::string::npos;
  }

  nodus::testing::TempDir home_;
  std::unique_ptr<store::Store> store_;
  std::vector<int> spawned_;  // cell numbers, in the order their supervisors were spawned
};

TEST_F(SweepRunnerTest, EveryCellRunsUnderASupervisorOfItsOwnWithinTheParallelLimit) {
  auto cells = plan(4, std::nullopt);
  auto sweep = new_sweep(std::nullopt);
  SweepSettings settings;
  settings.parallel = 2;
  std::string state = run(sweep, cells, settings, [](int) { return Script{.runs_for = 0.1}; });
  EXPECT_EQ(state, "completed");
  auto jobs = jobs_of(sweep);
  ASSERT_EQ(jobs.size(), 4u);
  std::vector<int64_t> supervisors;
  for (const auto& job : jobs) {
    EXPECT_EQ(job.state, JobState::kCompleted) << job.note;
    EXPECT_EQ(job.exit_code, 0);
    ASSERT_TRUE(job.started_at && job.ended_at);
    EXPECT_NEAR(job.cost, *job.ended_at - *job.started_at, 1e-6);  // $1 a second, all it ran
    EXPECT_NE(job.supervisor_pid, getpid());
    supervisors.push_back(job.supervisor_pid);
  }
  std::sort(supervisors.begin(), supervisors.end());
  EXPECT_EQ(std::unique(supervisors.begin(), supervisors.end()), supervisors.end());
  // Never more than two ran at once: at each start, count the jobs running then.
  for (const auto& a : jobs) {
    int at_once = 0;
    for (const auto& b : jobs)
      at_once += *b.started_at <= *a.started_at && *a.started_at < *b.ended_at;
    EXPECT_LE(at_once, 2);
  }
  EXPECT_EQ(spawned_.size(), 4u);
}

// A first run knows no cell's duration, but a grid's cells are related: here every "long" cell
// takes 12 times as long as a "short" one, whatever its k. Once the ended cells explain that
// (DurationModel), the long cells still pending start before the short ones. In grid order the
// last cell to start would be the last long one (12); it is a short one.
TEST_F(SweepRunnerTest, AFirstRunStartsTheCellsThatLookLongestOnceTheEndedOnesTellWhich) {
  auto cells = plan_grid({"k=1..6", "size=short,long"}, std::nullopt, {"train", "{k}", "{size}"});
  ASSERT_EQ(cells.size(), 12u);
  auto sweep = new_sweep(std::nullopt);
  SweepSettings settings;
  settings.parallel = 2;
  std::string state = run(sweep, cells, settings, [](int cell) {
    return Script{.runs_for = cell % 2 == 0 ? 1.2 : 0.1};  // even: size=long
  });
  EXPECT_EQ(state, "completed");
  ASSERT_EQ(spawned_.size(), 12u);
  EXPECT_EQ(spawned_.back() % 2, 1) << "the last cell started is a long one: " << spawned_.back();
  // Reordered, not lost or repeated.
  auto sorted = spawned_;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(sorted[i], i + 1);
}

// Under a --budget the order decides which cells the money reaches: the grid's, as asked, even
// when the ended cells show which are long.
TEST_F(SweepRunnerTest, UnderABudgetTheGridOrderIsKept) {
  auto cells = plan_grid({"k=1..6", "size=short,long"}, 5.0, {"train", "{k}", "{size}"});
  auto sweep = new_sweep(100.0);  // covers every cell's worst case twice over
  SweepSettings settings;
  settings.parallel = 2;
  settings.budget = 100.0;
  std::string state = run(sweep, cells, settings,
                          [](int cell) { return Script{.runs_for = cell % 2 == 0 ? 1.2 : 0.1}; });
  EXPECT_EQ(state, "completed");
  EXPECT_EQ(spawned_, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
}

// With one cell at a time the order cannot change the sweep's length: grid order, as given.
TEST_F(SweepRunnerTest, OneCellAtATimeKeepsTheGridOrder) {
  auto cells = plan_grid({"k=1..3", "size=short,long"}, std::nullopt, {"train", "{k}", "{size}"});
  auto sweep = new_sweep(std::nullopt);
  SweepSettings settings;
  settings.parallel = 1;
  std::string state = run(sweep, cells, settings,
                          [](int cell) { return Script{.runs_for = cell % 2 == 0 ? 0.3 : 0.02}; });
  EXPECT_EQ(state, "completed");
  EXPECT_EQ(spawned_, (std::vector<int>{1, 2, 3, 4, 5, 6}));
}

// GPU claims are machine-wide: a cell waits while another process's job holds its GPU and starts
// once that job releases it, woken by the release (store::GpuReleaseWatch), not by a timer: this
// sweep would look again only after an hour. Two cells on one GPU: never both at once.
TEST_F(SweepRunnerTest, AWaitingSweepStartsWhenAnotherProcessReleasesTheGpu) {
  auto cells = plan(2, std::nullopt);
  for (auto& c : cells) c.job.backend = "local";  // claims GPUs (the supervisors stay fake)
  auto sweep = new_sweep(std::nullopt);
  Inventory inventory;
  inventory.gpus.push_back({0, "H100", "NVIDIA H100", "GPU-0"});
  SweepSettings settings;
  settings.parallel = 2;  // the second cell waits for the first's GPU too
  settings.inventory = &inventory;
  settings.gpu_recheck = std::chrono::hours(1);
  // Another store's job holds GPU 0: a lock belongs to its open file, so this one, held here,
  // is busy for the runner's own attempts.
  const std::string other = home_.path() + "/other.db";
  ASSERT_TRUE(store::lock_gpu(0, 7, other));
  std::atomic<double> released{0};
  std::atomic<bool> done{false};
  std::thread holder([&] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);  // a SIGTERM below goes to the runner's signalfd
    auto own = store::Store::open(home_.db());
    // Once the runner has looked (its first cell's row is in), a moment more, then the release.
    for (int i = 0; i < 6000 && own->sweep_cells(sweep.id).empty(); ++i) ::usleep(10'000);
    ::usleep(200'000);
    released = unix_now();
    store::unlock_gpus(7, other);
    for (int i = 0; i < 6000 && !done; ++i) ::usleep(10'000);
    if (!done) ::kill(::getpid(), SIGTERM);  // never woken in a minute: the sweep stops, failed
  });
  std::string state = run(sweep, cells, settings, [](int) { return Script{.runs_for = 0.1}; });
  done = true;
  holder.join();
  EXPECT_EQ(state, "completed");
  auto jobs = jobs_of(sweep);
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& job : jobs) {
    EXPECT_EQ(job.state, JobState::kCompleted) << job.note;
    EXPECT_EQ(job.gpu_indices, std::vector<int>{0});
    ASSERT_TRUE(job.started_at && job.ended_at);
    EXPECT_GE(*job.started_at, released.load());
  }
  EXPECT_TRUE(*jobs[1].started_at >= *jobs[0].ended_at || *jobs[0].started_at >= *jobs[1].ended_at);
  EXPECT_FALSE(store::gpu_holder(0));  // released at the end
}

TEST_F(SweepRunnerTest, TheBudgetCapsEachCellAndSkipsTheCellsItCannotCover) {
  // Cells that never end by themselves and ignore SIGTERM: each runs to its $0.30 cap and is
  // killed there. $0.80 covers two worst cases; after two cells (>= $0.275 each: nodus is never
  // early) less than a third worst case is left.
  auto cells = plan(3, 0.3);
  auto sweep = new_sweep(0.8);
  SweepSettings settings;
  settings.parallel = 1;
  settings.budget = 0.8;
  std::string state = run(sweep, cells, settings, [](int) { return Script{.ignores_term = true}; });
  EXPECT_EQ(state, "budget");
  auto jobs = jobs_of(sweep);
  ASSERT_EQ(jobs.size(), 2u);  // the skipped cell never got a row
  double spent = 0;
  bool any_late = false;
  for (const auto& job : jobs) {
    EXPECT_EQ(job.state, JobState::kCostCap) << job.note;
    EXPECT_GE(job.cost, 0.27);
    if (!late(job)) {
      EXPECT_LE(job.cost, 0.3 + 1e-9) << job.note;
    }
    any_late |= late(job);
    spent += job.cost;
  }
  if (!any_late) {
    EXPECT_LE(spent, 0.8);
  }
  EXPECT_FALSE(cells[0].skipped);
  EXPECT_FALSE(cells[1].skipped);
  EXPECT_TRUE(cells[2].skipped);
  EXPECT_EQ(spawned_, (std::vector<int>{1, 2}));
}

TEST_F(SweepRunnerTest, AStopOfTheSweepStopsItsRunningCellsAndKeepsTheFinishedOnes) {
  // Cell 1 ends by itself; cells 2 and 3 would run for an hour. The stop (SIGTERM to the sweep,
  // as `nodus stop` sends) comes once the third cell is spawned: after cell 1 ended.
  auto cells = plan(4, std::nullopt);
  auto sweep = new_sweep(std::nullopt);
  SweepSettings settings;
  settings.parallel = 2;
  std::string state = run(
      sweep, cells, settings,
      [](int cell) { return cell == 1 ? Script{.runs_for = 0.05} : Script{}; },
      [](int spawned) {
        if (spawned == 3) ::kill(getpid(), SIGTERM);  // blocked: the runner reads it
      });
  EXPECT_EQ(state, "stopped");
  EXPECT_EQ(spawned_, (std::vector<int>{1, 2, 3}));  // nothing starts after the stop
  auto jobs = jobs_of(sweep);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].state, JobState::kCompleted);
  EXPECT_EQ(jobs[1].state, JobState::kStopped) << jobs[1].note;
  // The third may be stopped before or after its job launched: either way it did not complete.
  EXPECT_TRUE(is_final(jobs[2].state));
  EXPECT_NE(jobs[2].state, JobState::kCompleted);
  for (const auto& job : store_->active_jobs())
    ADD_FAILURE() << "job " << job.id << " still active";
}

TEST_F(SweepRunnerTest, StopEarlyStopsAClearlyWorseCellOnceTheBestHasFinished) {
  // Cell 1 does 1000 samples/s and ends after 1.5 s; cell 2 does 10/s and would run an hour.
  // Both are steady from their first report (warm-up 0), sampled every 100 ms.
  auto cells = plan(2, std::nullopt);
  SuperviseOptions options;
  options.sample_interval = std::chrono::milliseconds(100);
  options.warmup = "0s";
  for (auto& c : cells) c.job.options = options.to_json();
  auto sweep = new_sweep(std::nullopt);
  SweepSettings settings;
  settings.parallel = 2;
  settings.stop_early = 3;
  settings.warmup_s = 0;
  std::string state = run(sweep, cells, settings, [](int cell) {
    return cell == 1 ? CellScript(Script{.runs_for = 1.5}, 1000) : CellScript(Script{}, 10);
  });
  EXPECT_EQ(state, "completed");  // a loser stopped early did what was asked of it
  auto jobs = jobs_of(sweep);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].state, JobState::kCompleted);
  EXPECT_EQ(jobs[1].state, JobState::kStopped) << jobs[1].note;
  EXPECT_NE(jobs[1].note.find("stopped early"), std::string::npos) << jobs[1].note;
  EXPECT_FALSE(cells[0].stopped_early);
  EXPECT_TRUE(cells[1].stopped_early);
  auto stats = store_->stats(jobs[1].id);
  ASSERT_TRUE(stats);
  ASSERT_TRUE(stats->values.contains("stopped_early"));
  EXPECT_GT(stats->values["stopped_early"]["ratio"].get<double>(), 3);
  // Stopped once the best cell had finished, not before.
  ASSERT_TRUE(jobs[0].ended_at && jobs[1].ended_at);
  EXPECT_GE(*jobs[1].ended_at, *jobs[0].ended_at);
}

TEST_F(SweepRunnerTest, AResumedSweepRunsOnlyWhatDidNotCompleteOnWhatIsLeftOfItsBudget) {
  // Cells capped at $3 under a $4.50 budget, one at a time. First run: cells 1 and 3 complete
  // after 1 s ($1 or a little more each), cell 2 fails at once; each start found >= $3 left.
  auto sweep = new_sweep(4.5);
  SweepSettings settings;
  settings.parallel = 1;
  settings.budget = 4.5;
  auto first = plan(3, 3.0);
  auto failing = [](int cell) {
    return cell == 2 ? Script{.runs_for = 0, .exit_code = 3} : Script{.runs_for = 1.0};
  };
  std::string state = run(sweep, first, settings, failing);
  EXPECT_EQ(state, "failed");
  auto jobs = jobs_of(sweep);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].state, JobState::kCompleted);
  EXPECT_EQ(jobs[1].state, JobState::kFailed);
  EXPECT_EQ(jobs[1].exit_code, 3);
  EXPECT_EQ(jobs[2].state, JobState::kCompleted);
  const double spent = store_->sweep_spent(sweep.id);
  EXPECT_GE(spent, 2.0 - 1e-6);

  // Resumed under the same budget: only cell 2 is left, and what is left of $4.50 (<= $2.50)
  // cannot cover its $3 worst case: it is skipped, not run on a fresh budget.
  spawned_.clear();
  auto again = plan(3, 3.0);
  mark_done(again, store_->sweep_cells(sweep.id));
  EXPECT_TRUE(again[0].done && !again[1].done && again[2].done);
  state = run(sweep, again, settings, [](int) { return Script{.runs_for = 0.05}; });
  EXPECT_EQ(state, "budget");
  EXPECT_TRUE(spawned_.empty());
  EXPECT_TRUE(again[1].skipped);

  // With room in the budget the resume runs that one cell, and it completes.
  settings.budget = spent + 3.5;
  again = plan(3, 3.0);
  mark_done(again, store_->sweep_cells(sweep.id));
  state = run(sweep, again, settings, [](int) { return Script{.runs_for = 0.05}; });
  EXPECT_EQ(state, "completed");
  EXPECT_EQ(spawned_, (std::vector<int>{2}));
  jobs = jobs_of(sweep);  // the newest attempt of each cell
  ASSERT_EQ(jobs.size(), 3u);
  for (const auto& job : jobs) EXPECT_EQ(job.state, JobState::kCompleted) << job.id;
  EXPECT_GT(jobs[1].id, jobs[2].id);  // cell 2's new attempt; the failed one stays on record
  EXPECT_GT(store_->sweep_spent(sweep.id), spent);
}

}  // namespace
}  // namespace nodus::engine
