#pragma once
// Measuring a job without changing it: the Python hook (telemetry/pyhook.h) for jobs that run
// Python, the phases (start-up, warm-up, steady state), --measure's time box, the I/O evidence
// for the diagnosis, and the choice between what the job reports and what was instrumented.
//
// Precedence, per figure: the job's own report (NODUS_METRICS or a --metric-regex named
// samples_per_sec / data_wait, or step_time with samples_per_step / data_time) wins over the
// instrumented one; an instrumented figure is marked as such in the stats.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/samples.h"
#include "engine/series_source.h"
#include "engine/supervise_options.h"
#include "telemetry/diagnosis.h"
#include "telemetry/phases.h"
#include "telemetry/summary.h"

namespace nodus::engine {

// torch.profiler's schedule under --profile, in DataLoader batches (optimizer steps in a loop
// without a DataLoader): wait, warm-up, active.
inline constexpr const char* kProfileSchedule = "5,2,5";

// The hook's folder for a job: next to its metrics file ("<id>.hook").
std::string hook_dir(const JobRecord& job);

// The metrics nodus's own hook writes ("hook.r<rank>.<field>"): they feed throughput and data
// wait, and are not the job's own metrics (a sweep's metric columns leave them out).
bool is_hook_metric(std::string_view name);

// Decides whether the job gets the Python hook and, if so, writes it (a local job's; a Slurm
// job's script writes its own as the job's user, in the workdir its nodes share with nodus:
// Backend::metrics_path) and adds PYTHONPATH
// (the hook's folder first, then the user's or nodus's own), NODUS_HOOK_DIR and NODUS_WARMUP
// to env. Returns {"on": bool, "why": text} as kept in the job's stats.
nlohmann::json prepare_instrumentation(const JobRecord& job, const SuperviseOptions& options,
                                       std::map<std::string, std::string>& env);

// What the end of a job concludes from its series.
struct Conclusion {
  telemetry::Summary summary;        // steady state where known; money whole-job
  std::optional<double> throughput;  // steady, in throughput_metric's unit
  // What throughput counts: "" keeps the --throughput metric; "tokens_per_sec" where the hook
  // measured the model's token inputs and the job reports no throughput of its own.
  std::string throughput_metric;
  telemetry::Evidence evidence;
  nlohmann::json stats = nlohmann::json::object();  // phases, sources, loaders, I/O
};

class Measurement {
 public:
  Measurement(const SuperviseOptions& options, nlohmann::json instrument_status);
  ~Measurement();

  void on_started(const JobRecord& job);
  // Once per tick: new hook points (to store with the job's metrics) and the I/O sample.
  std::vector<MetricPoint> tick(double now);
  // Set once --measure's window is over: the note to record.
  std::optional<std::string> measured(double now) const;
  // At the end: last hook points.
  std::vector<MetricPoint> finish(double now);

  // Reads the job's series row by row (each table once, plus the first report's time), so its
  // memory does not grow with the job's length; cost and wall time are the job's.
  Conclusion conclude(const JobRecord& job, SeriesSource& series, double cost, double wall_s) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One rank's means over the phase Instrumented reports (steady, else warm-up).
struct RankFigures {
  double samples_per_sec = 0;
  std::optional<double> tokens_per_sec;
  std::optional<double> steps_per_sec;  // optimizer steps
  std::optional<double> data_wait;
  std::optional<double> step_time;
};

// From hook points named "hook.r<R>.<field>": the sum over ranks of each rank's mean
// samples_per_sec and tokens_per_sec after its steady start, the mean over ranks of data_wait,
// step_time and steps_per_sec (optimizer steps: data-parallel ranks step together).
struct Instrumented {
  std::optional<double> samples_per_sec;
  std::optional<double> tokens_per_sec;
  std::optional<double> steps_per_sec;
  std::optional<double> data_wait;
  std::optional<double> step_time;
  int ranks = 0;
  bool steady = false;                  // false: only warm-up lines existed
  std::map<int, RankFigures> per_rank;  // the ranks that reported a throughput
};

// Model FLOPs utilization: FLOPs per optimizer step (each rank's, counted by PyTorch in its
// hook) x that rank's steps/s, summed over ranks, against every rank's GPU's dense BF16 peak
// (job options' "peak_tflops", from the catalog); "precision" is what the matmuls ran in.
// Returns the stats object ("mfu"): value (0..1) and its parts, or a note saying what is
// missing; null when no FLOPs were counted.
nlohmann::json model_flops_utilization(const std::map<int, nlohmann::json>& states,
                                       const std::map<int, RankFigures>& per_rank,
                                       const nlohmann::json& job_options,
                                       const std::string& gpu_type, double usd_per_hour);

// Which rank the others wait for, from each rank's figures (more than one rank). A rank more
// than 5% below the fastest's throughput is the slowest (ranks that do not sync). Ranks in step
// (data-parallel training syncs them at every gradient all-reduce) take the same time per step;
// the one that lags by its data is the one longest outside its step, and the others wait for it
// at the sync for what they spent less outside. With step times, that rank is named where its
// own work per step is 10% above the others' median, with what it costs them; without, the rank
// that waits longest for data, 5 points above the least. nullopt rank: none stands out; text
// says what was compared.
struct SlowestRank {
  std::optional<int> rank;
  std::string text;
  std::optional<double> own_ratio;    // its own work per step / the other ranks' median
  std::optional<double> others_wait;  // the share of each step the other ranks wait for it
};
// steps: the ranks' loops are driven by optimizer steps (no DataLoader), so their data wait is
// the host time outside the step, and is called so.
SlowestRank slowest_rank(const std::map<int, RankFigures>& per_rank,
                         const std::map<int, std::string>& node_by_rank, bool steps = false);
Instrumented aggregate_hook_points(const std::vector<MetricPoint>& points,
                                   const std::map<int, double>& steady_t_by_rank);

// The same, fed one point at a time: running sums per (rank, field), split at each rank's
// steady_t, so memory grows with the ranks, not with the points.
class HookAccumulator {
 public:
  explicit HookAccumulator(std::map<int, double> steady_t_by_rank)
      : steady_t_(std::move(steady_t_by_rank)) {}
  // Any point; only those named hook.r<R>.<field> count.
  void add(const MetricPoint& p);
  Instrumented finish() const;

 private:
  struct Sums {
    double sps = 0, dw = 0, st = 0, tps = 0, stps = 0;
    int64_t n_sps = 0, n_dw = 0, n_st = 0, n_tps = 0, n_stps = 0;
    // A loop driven by optimizer steps also writes each interval's totals: its figures are
    // then total over total (the steps' time, samples, tokens, time outside the step).
    double span = 0, steps = 0, samples = 0, tokens = 0, outside = 0;
  };
  std::map<int, double> steady_t_;
  std::map<int, Sums> steady_, all_;
};

}  // namespace nodus::engine
