#include "engine/sweep_plan.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sweep/cell_key.h"

namespace nodus::engine {

CellSlot cell_slot(int cell_index, uint64_t grid_cells) {
  if (grid_cells == 0) return {cell_index, 0};
  return {static_cast<int>(static_cast<uint64_t>(cell_index) % grid_cells),
          static_cast<int>(static_cast<uint64_t>(cell_index) / grid_cells)};
}

std::vector<std::string> cell_gpu_values(const sweep::ArgvTemplate& gpu_template,
                                         const sweep::Grid& grid, const std::vector<int>& indices) {
  std::vector<std::string> out;
  auto add = [&](int index) {
    std::string v = gpu_template.resolve(sweep::cell_at(grid, index)).front();
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(std::move(v));
  };
  if (indices.empty()) {
    const uint64_t total = sweep::cell_count(grid);
    for (uint64_t i = 0; i < total; ++i) add(static_cast<int>(i));
  } else {
    for (int i : indices) add(i);
  }
  return out;
}

std::vector<PlannedCell> plan_cells(const SweepPlanInput& input, const sweep::Grid& grid,
                                    const sweep::ArgvTemplate& tmpl) {
  std::vector<int> indices = input.indices;
  const uint64_t total = sweep::cell_count(grid);
  if (indices.empty())
    for (uint64_t i = 0; i < total; ++i) indices.push_back(static_cast<int>(i));
  std::vector<PlannedCell> cells;
  for (int r = 0; r < input.repeat; ++r) {
    for (int index : indices) {
      sweep::Cell cell = sweep::cell_at(grid, index);
      const JobRecord* base = &input.base;
      const GpuRequest* gpu = &input.gpu;
      if (input.gpu_template) {
        const auto& b = input.gpu_bases.at(input.gpu_template->resolve(cell).front());
        base = &b.job;
        gpu = &b.gpu;
      }
      PlannedCell p;
      p.index = static_cast<int>(static_cast<uint64_t>(index) + static_cast<uint64_t>(r) * total);
      p.label = sweep::cell_label(cell.params);
      if (input.repeat > 1) p.label += " #" + std::to_string(r + 1);
      p.job = *base;
      p.job.argv = tmpl.resolve(cell);
      p.job.params = sweep::params_json(cell.params);
      for (const auto& param : cell.params)
        if (std::find(input.loader_axes.begin(), input.loader_axes.end(), param.name) !=
            input.loader_axes.end())
          (*p.job.options)["loader"][param.name] = param.value;
      p.job.cell_index = p.index;
      p.env = input.env;
      for (const auto& [k, v] : sweep::cell_env(cell)) p.env[k] = v;
      // The run's number as ps (s3:5) and show (cell 5) give it, repeats included.
      p.env["NODUS_SWEEP_CELL"] = std::to_string(p.index + 1);
      if (input.repeat > 1) p.env["NODUS_SWEEP_REPEAT"] = std::to_string(r + 1);
      p.job.env = p.env;
      p.job.cell_key = sweep::cell_key({p.job.argv, p.env, *gpu, input.max_cost, p.job.timeout_ms});
      auto legacy_env = p.env;
      legacy_env["NODUS_SWEEP_CELL"] = std::to_string(index);
      p.legacy_cell_key =
          sweep::cell_key({p.job.argv, legacy_env, *gpu, input.max_cost, p.job.timeout_ms});
      cells.push_back(std::move(p));
    }
  }
  return cells;
}

void mark_done(std::vector<PlannedCell>& cells, const std::vector<JobRecord>& attempts) {
  std::map<int, size_t> by_index;
  for (size_t i = 0; i < cells.size(); ++i) by_index[cells[i].index] = i;
  for (const auto& done : attempts) {
    if (done.state != JobState::kCompleted) continue;
    auto it = by_index.find(done.cell_index);
    if (it == by_index.end()) continue;
    auto& c = cells[it->second];
    if (c.job.cell_key == done.cell_key || c.legacy_cell_key == done.cell_key) {
      c.done = true;
      c.job = done;
    }
  }
}

}  // namespace nodus::engine
