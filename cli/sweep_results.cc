#include "cli/sweep_results.h"

#include "cli/job_views.h"
#include "sweep/grid.h"

namespace nodus::cli {

SweepResults load_sweep_results(store::Store& store, const store::SweepRecord& sweep) {
  SweepResults out;
  std::map<int, JobRecord> attempts;
  for (auto& job : store.sweep_cells(sweep.id)) attempts[job.cell_index] = job;
  std::vector<sweep::Cell> grid_cells;
  auto grid = sweep::parse_grid(sweep.definition.value("params", std::vector<std::string>{}));
  if (grid) grid_cells = sweep::expand(*grid);
  for (const auto& cell : grid_cells) {
    sweep::CellResult r;
    r.index = cell.index + 1;  // cells are numbered from 1 wherever users see them
    r.params = cell.params;
    auto it = attempts.find(cell.index);
    if (it == attempts.end()) {
      r.state = sweep.state == "running" ? "pending" : "not run";
      out.cells.push_back(r);
      out.jobs.emplace_back();
      continue;
    }
    const JobRecord& job = it->second;
    r.state = std::string(to_string(job.state));
    r.exit_code = job.exit_code;
    r.wall_s = wall_seconds(job);
    r.gpu_seconds = job.gpu_seconds();
    r.cost = job.cost;
    if (auto stats = store.stats(job.id)) {
      const auto& v = stats->values;
      auto num = [&](const char* key) -> std::optional<double> {
        if (v.contains(key) && v[key].is_number()) return v[key].get<double>();
        return std::nullopt;
      };
      r.throughput = num("throughput");
      r.data_wait = num("data_wait_share");
      r.util_mean = num("util_mean");
      r.idle_usd = num("idle_usd");
      if (v.contains("verdict") && r.util_mean) r.verdict = v["verdict"].get<std::string>();
    }
    out.cells.push_back(r);
    out.jobs.emplace_back(job);
  }
  out.total_cost = store.sweep_spent(sweep.id);  // every attempt, retried and resumed ones too
  return out;
}

}  // namespace nodus::cli
