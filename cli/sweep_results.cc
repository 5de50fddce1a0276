#include "cli/sweep_results.h"

#include <nlohmann/json.hpp>

#include "cli/job_views.h"
#include "engine/measure.h"
#include "store/job_stats.h"
#include "sweep/grid.h"

namespace nodus::cli {
namespace {

// Fills a cell's figures from one run.
struct RunFigures {
  double wall_s = 0, gpu_seconds = 0, cost = 0;
  std::optional<double> throughput, data_wait, util_mean, idle_usd, per_m, mfu;
  std::optional<std::string> verdict, slowest_rank;
  std::optional<int> workers;  // the driving DataLoader's num_workers (the hook's)
  std::string throughput_metric;
  std::string unsteady;  // sweep::CellResult::unsteady
  std::map<std::string, double> metrics;
};

RunFigures figures_of(store::Store& store, const JobRecord& job) {
  RunFigures f;
  f.wall_s = wall_seconds(job);
  f.gpu_seconds = job.gpu_seconds();
  f.cost = live_cost(job);
  f.metrics = store.last_metrics(job.id);
  std::erase_if(f.metrics, [](const auto& m) { return engine::is_hook_metric(m.first); });
  if (auto stats = store.stats(job.id)) {
    const auto& v = stats->values;
    auto num = [&](const char* key) -> std::optional<double> {
      if (v.contains(key) && v[key].is_number()) return v[key].get<double>();
      return std::nullopt;
    };
    f.throughput = num("throughput");
    if (v.contains("throughput_metric") && v["throughput_metric"].is_string())
      f.throughput_metric = v["throughput_metric"].get<std::string>();
    f.data_wait = num("data_wait_share");
    f.util_mean = num("util_mean");
    if (v.contains("mfu") && v["mfu"].is_object() && v["mfu"].contains("value") &&
        v["mfu"]["value"].is_number())
      f.mfu = v["mfu"]["value"].get<double>();
    f.idle_usd = num("idle_usd");
    if (v.contains("loaders") && v["loaders"].is_array() && v.contains("loader_driver"))
      for (const auto& l : v["loaders"])
        if (l.is_object() && l.value("name", nlohmann::json()) == v["loader_driver"] &&
            l.contains("workers") && l["workers"].is_number_integer())
          f.workers = l["workers"].get<int>();
    // A verdict whenever there is something to say: a diagnosis, or GPU figures to call "ok".
    if (v.contains("verdict") && v["verdict"].is_string() &&
        (f.util_mean || v["verdict"] != "no-gpu-data"))
      f.verdict = v["verdict"].get<std::string>();
    // Of several ranks, the one the others wait for, with its node (engine/measure.cc).
    if (v.contains("slowest_rank") && v["slowest_rank"].is_number_integer()) {
      const int rank = v["slowest_rank"].get<int>();
      f.slowest_rank = "rank " + std::to_string(rank);
      if (v.contains("per_rank") && v["per_rank"].is_array())
        for (const auto& r : v["per_rank"])
          if (r.is_object() && r.value("rank", -1) == rank && r.contains("node") &&
              r["node"].is_string())
            *f.slowest_rank += " (" + r["node"].get<std::string>() + ")";
    }
    // Phases known but no steady state: every rate is the warm-up's (engine/measure.cc).
    if (v.contains("phases") && v["phases"].is_object() && !v["phases"].contains("steady_s"))
      f.unsteady = "still in warm-up at the end";
    // One column per quantity: where nodus has its own throughput or data wait (drawn from the
    // job's report or measured), the job's report of it is that figure's source, not a column.
    if (f.throughput) f.metrics.erase(v.value("throughput_metric", std::string("samples_per_sec")));
    if (f.data_wait) f.metrics.erase("data_wait");
  }
  return f;
}

std::optional<double> mean_opt(const std::vector<RunFigures>& runs,
                               std::optional<double> RunFigures::*field) {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs)
    if (r.*field) sum += *(r.*field), ++n;
  if (n == 0) return std::nullopt;
  return sum / n;
}

// The cell's figures from its runs: means of wall, GPU time, cost and each measure; the loader's
// workers and the first unsteady note; with more than one run, every run's sample for the
// comparison's spread.
void add_figures(sweep::CellResult& r, const std::vector<RunFigures>& runs) {
  r.runs = static_cast<int>(runs.size());
  double wall = 0, gpu = 0, cost = 0;
  for (const auto& f : runs) wall += f.wall_s, gpu += f.gpu_seconds, cost += f.cost;
  r.wall_s = wall / r.runs;
  r.gpu_seconds = gpu / r.runs;
  r.cost = cost / r.runs;
  r.throughput = mean_opt(runs, &RunFigures::throughput);
  r.data_wait = mean_opt(runs, &RunFigures::data_wait);
  r.util_mean = mean_opt(runs, &RunFigures::util_mean);
  r.mfu = mean_opt(runs, &RunFigures::mfu);
  r.idle_usd = mean_opt(runs, &RunFigures::idle_usd);
  r.verdict = runs.back().verdict;
  r.slowest_rank = runs.back().slowest_rank;
  r.loader_workers = runs.back().workers;
  r.throughput_metric = runs.back().throughput_metric;
  for (const auto& f : runs)
    if (f.workers != r.loader_workers) r.loader_workers.reset();  // runs that disagree
  for (const auto& f : runs)
    if (r.unsteady.empty()) r.unsteady = f.unsteady;
  std::map<std::string, std::vector<double>> metric_runs;
  for (const auto& f : runs)
    for (const auto& [name, v] : f.metrics) metric_runs[name].push_back(v);
  for (const auto& [name, vs] : metric_runs) {
    double sum = 0;
    for (double v : vs) sum += v;
    r.metrics[name] = sum / static_cast<double>(vs.size());
  }
  if (r.runs > 1) {
    for (const auto& f : runs) {
      r.samples["wall_s"].push_back(f.wall_s);
      r.samples["cost_usd"].push_back(f.cost);
      if (f.throughput) r.samples["throughput"].push_back(*f.throughput);
      if (f.throughput && *f.throughput > 0 && f.wall_s > 0)
        r.samples["usd_per_million_samples"].push_back(f.cost / (*f.throughput * f.wall_s) * 1e6);
    }
    for (const auto& [name, vs] : metric_runs) r.samples["metric:" + name] = vs;
  }
}

}  // namespace

SweepResults load_sweep_results(store::Store& store, const store::SweepRecord& sweep) {
  SweepResults out;
  std::map<int, JobRecord> attempts;
  for (auto& job : store.sweep_cells(sweep.id)) attempts[job.cell_index] = job;
  const auto& d = *sweep.definition;
  auto grid = sweep::parse_grid(d.value("params", std::vector<std::string>{}));
  if (!grid) return out;
  const uint64_t total = sweep::cell_count(*grid);
  std::vector<int> indices;
  if (d.value("sample", uint64_t{0}) > 0)
    indices = sweep::sample_cells(*grid, d["sample"].get<uint64_t>(), d.value("seed", uint64_t{1}));
  else if (total <= sweep::kMaxCells)
    for (uint64_t i = 0; i < total; ++i) indices.push_back(static_cast<int>(i));
  const int repeat = d.value("repeat", 1);

  for (int index : indices) {
    sweep::Cell cell = sweep::cell_at(*grid, index);
    sweep::CellResult r;
    r.index = cell.index + 1;  // cells are numbered from 1 wherever users see them
    r.params = cell.params;
    std::vector<JobRecord> jobs;
    for (int k = 0; k < repeat; ++k) {
      auto it = attempts.find(static_cast<int>(static_cast<uint64_t>(index) + k * total));
      if (it != attempts.end()) jobs.push_back(it->second);
    }
    if (jobs.empty()) {
      r.state = sweep.state == "running" || sweep.state == "starting" ? "pending" : "not run";
      out.cells.push_back(r);
      out.jobs.emplace_back();
      continue;
    }
    // The cell's state: completed when every run completed; else a run still going, else the
    // first run that did not complete, else (runs missing) pending / not run.
    std::vector<JobRecord> done;
    std::optional<JobRecord> active, bad;
    for (const auto& job : jobs) {
      r.job_ids.push_back(job.id);
      if (job.state == JobState::kCompleted)
        done.push_back(job);
      else if (!is_final(job.state) && !active)
        active = job;
      else if (is_final(job.state) && !bad)
        bad = job;
    }
    const JobRecord& shown = active ? *active : bad ? *bad : jobs.back();
    if (active || bad)
      r.state = std::string(to_string(shown.state));
    else if (static_cast<int>(done.size()) < repeat)
      r.state = sweep.state == "running" ? "pending" : "not run";
    else
      r.state = "completed";
    r.exit_code = shown.exit_code;
    if (shown.state == JobState::kStopped) {
      if (auto stats = store.stats(shown.id); stats && stats->values.contains("stopped_early")) {
        r.state = "stopped-early";
        ++out.stopped_early;
        out.saved_usd += stats->values["stopped_early"].value("saved_usd", 0.0);
      }
    }
    // Figures: the completed runs' means (every run's when none completed).
    std::vector<RunFigures> runs;
    for (const auto& job : done.empty() ? jobs : done) runs.push_back(figures_of(store, job));
    add_figures(r, runs);
    out.cells.push_back(r);
    out.jobs.emplace_back(shown);
  }
  std::vector<JobRecord> newest;
  for (const auto& job : out.jobs)
    if (job) newest.push_back(*job);
  out.total_cost = sweep_spent_now(store, sweep.id, newest);  // every attempt, running too
  return out;
}

}  // namespace nodus::cli
