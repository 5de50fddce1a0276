// gen_store: fills a nodus store with a large history through the store's own API, for the
// store-scale benchmark (bench/run.sh builds it against build-bench's static libraries).
//
//   gen_store PATH JOBS SWEEPS METRIC_POINTS
//
// JOBS jobs in all: 90% of them are the cells of SWEEPS sweeps (equal share per sweep), the rest
// standalone runs. Every job is finished (so no command changes the data by reconciling), has
// stats like those the observer writes, and METRIC_POINTS / JOBS metric points. Start times are
// spread over the last 90 days; GPU types and states are mixed. A fixed seed makes every run
// generate the same store. Prints what it wrote and how long it took on stdout.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "store/job_stats.h"
#include "store/store.h"

namespace {

struct GpuKind {
  const char* type;
  int count;
  double rate;
};

// What the jobs ran on, in the proportions drawn below (index = weight bucket).
const GpuKind kKinds[] = {
    {"H100-SXM", 8, 2.99}, {"H100-SXM", 1, 2.99}, {"A100-80GB", 4, 1.79},
    {"L4", 1, 0.80},       {"", 0, 0.0},
};

const nodus::JobState kFinalStates[] = {
    nodus::JobState::kCompleted, nodus::JobState::kCompleted, nodus::JobState::kCompleted,
    nodus::JobState::kCompleted, nodus::JobState::kCompleted, nodus::JobState::kCompleted,
    nodus::JobState::kFailed,    nodus::JobState::kTimeout,   nodus::JobState::kCostCap,
    nodus::JobState::kStopped,
};

class Generator {
 public:
  Generator(nodus::store::Store& store, int metric_points_per_job)
      : store_(store), points_per_job_(metric_points_per_job) {}

  // One finished job, with its stats and metric series; returns its id.
  int64_t add_job(nodus::JobRecord job) {
    const GpuKind& kind = kKinds[pick_(rng_) % 5];
    job.backend = "local";
    job.argv = {"python", "train.py", "--epochs", "3"};
    job.workdir = "/home/user/project";
    job.gpu_type = kind.type;
    job.gpu_count = kind.count;
    for (int g = 0; g < kind.count; ++g) job.gpu_indices.push_back(g);
    job.inventory_source = kind.count ? "NODUS_LOCAL_GPUS" : "";
    job.rate_per_gpu_hour = kind.rate;
    job.max_cost = 50.0;
    job.timeout_ms = 4 * 3600 * 1000;
    double wall = 30 + seconds_(rng_);
    job.created_at = now_ - 90 * 86400.0 * unit_(rng_);
    job.started_at = job.created_at + 0.5;
    job.ended_at = *job.started_at + wall;
    job.state = kFinalStates[pick_(rng_) % 10];
    job.exit_code = job.state == nodus::JobState::kCompleted ? 0 : 1;
    job.cost = kind.count * kind.rate * wall / 3600.0;
    job.supervisor_pid = 1;  // finished jobs are never reconciled; any value will do
    job.log_path = "/home/user/.local/share/nodus/logs/job.log";
    int64_t id = store_.insert_job(job);

    std::vector<nodus::MetricPoint> points;
    points.reserve(points_per_job_);
    for (int k = 0; k < points_per_job_; ++k) {
      double t = *job.started_at + wall * (k + 1) / (points_per_job_ + 1);
      if (k % 2 == 0)
        points.push_back({t, "samples_per_sec", 4000 + 2000 * unit_(rng_)});
      else
        points.push_back({t, "data_wait", unit_(rng_) * 0.5});
    }
    store_.add_metrics(id, points);

    nlohmann::json stats = {{"util_mean", 100 * unit_(rng_)},
                            {"throughput", 4000 + 2000 * unit_(rng_)},
                            {"throughput_metric", "samples_per_sec"},
                            {"data_wait_share", unit_(rng_) * 0.5},
                            {"idle_usd", job.cost * unit_(rng_)},
                            {"verdict", "GPU idle 38% of the time: data loading"}};
    store_.put_stats({id, stats});
    return id;
  }

  int64_t add_sweep(int index, int cells) {
    nodus::store::SweepRecord sweep;
    sweep.name = "sweep-" + std::to_string(index);
    sweep.argv = {"python", "train.py", "--lr", "{lr}"};
    sweep.definition = {{"params", {"lr=1.." + std::to_string(cells)}},
                        {"options", nlohmann::json::object()},
                        {"cells", cells}};
    sweep.definition_hash = "bench" + std::to_string(index);
    sweep.state = "completed";
    sweep.created_at = now_ - 90 * 86400.0 * unit_(rng_);
    sweep.ended_at = sweep.created_at + 3600;
    sweep.supervisor_pid = 1;
    return store_.insert_sweep(sweep);
  }

 private:
  nodus::store::Store& store_;
  int points_per_job_;
  double now_ = nodus::unix_now();
  std::mt19937_64 rng_{20261129};
  std::uniform_int_distribution<int> pick_{0, 1 << 20};
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  std::uniform_real_distribution<double> seconds_{0.0, 7200.0};
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: gen_store PATH JOBS SWEEPS METRIC_POINTS\n");
    return 2;
  }
  const std::string path = argv[1];
  const int jobs = std::atoi(argv[2]);
  const int sweeps = std::atoi(argv[3]);
  const long points = std::atol(argv[4]);
  if (jobs <= 0 || sweeps <= 0 || points < 0) {
    std::fprintf(stderr, "gen_store: JOBS and SWEEPS must be > 0, METRIC_POINTS >= 0\n");
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  auto store = nodus::store::Store::open(path);
  Generator gen(*store, static_cast<int>(points / jobs));

  const int cells_per_sweep = jobs * 9 / 10 / sweeps;
  const int standalone = jobs - cells_per_sweep * sweeps;
  // Interleave standalone runs with sweeps, as a user's history would.
  int written = 0, standalone_left = standalone;
  for (int s = 0; s < sweeps; ++s) {
    int64_t sweep_id = gen.add_sweep(s, cells_per_sweep);
    for (int c = 0; c < cells_per_sweep; ++c) {
      nodus::JobRecord job;
      job.name = "sweep-" + std::to_string(s) + "-" + std::to_string(c + 1);
      job.sweep_id = sweep_id;
      job.cell_index = c;
      job.cell_key = "lr=" + std::to_string(c + 1);
      job.params = {{"lr", c + 1}};
      gen.add_job(job);
      ++written;
    }
    int share = standalone_left / (sweeps - s);
    for (int k = 0; k < share; ++k) {
      nodus::JobRecord job;
      job.name = "run-" + std::to_string(written);
      gen.add_job(job);
      ++written;
    }
    standalone_left -= share;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("jobs=%d sweeps=%d cells_per_sweep=%d metric_points=%ld seconds=%.1f\n", written,
              sweeps, cells_per_sweep, static_cast<long>(points / jobs) * written, secs);
  return 0;
}
