#pragma once
// SweepPlan turns a sweep's definition (a base job, the grid, the argv template) into the cells
// to run, and marks the cells an earlier run completed (--resume). Pure: no store, clock or
// process; the CLI and the detached sweep supervisor plan the same way.
//
// Which cells: every cell of the grid, or the --sample subset (sweep::sample_cells). Each is run
// `repeat` times; the runs are interleaved (every cell once, then every cell again, ...) so that
// drift over time (thermals, a neighbour's load) hits every cell alike. A run's cell_index is
// grid_index + r x cell_count(grid), so --resume and the tables tell repeats apart; with
// repeats the job also sees NODUS_SWEEP_REPEAT=r (1-based), which makes each run's cell key
// distinct. NODUS_SWEEP_CELL is cell_index + 1, the number ps and show give the run.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/parse.h"
#include "engine/planned_cell.h"
#include "sweep/grid.h"
#include "sweep/placeholders.h"

namespace nodus::engine {

struct SweepPlanInput {
  JobRecord base;                          // the built job every cell starts from
  std::map<std::string, std::string> env;  // the user's --env, unredacted
  GpuRequest gpu;
  std::optional<double> max_cost;
  std::vector<int> indices;  // grid cells to run (ascending); empty: every cell
  int repeat = 1;
  // Axes whose value is a DataLoader knob the hook sets (sweep --loader): each cell's value
  // goes into its job's options ("loader"), beside the knobs every cell has.
  std::vector<std::string> loader_axes;
  // --gpu with placeholders (sweep --gpu H100:{gpus}): each cell's GPUs are this template's
  // value for the cell, and its job starts from that value's entry of `gpu_bases` (built for
  // every value the cells take) instead of `base` and `gpu`.
  struct GpuBase {
    JobRecord job;
    GpuRequest gpu;
  };
  std::optional<sweep::ArgvTemplate> gpu_template;
  std::map<std::string, GpuBase> gpu_bases;
};

// The --gpu value of each cell of `grid` that `indices` name (every cell when empty), once
// each, for a --gpu with placeholders.
std::vector<std::string> cell_gpu_values(const sweep::ArgvTemplate& gpu_template,
                                         const sweep::Grid& grid, const std::vector<int>& indices);

// A stored cell_index split into the grid cell and the repeat (0-based).
struct CellSlot {
  int grid_index = 0;
  int repeat = 0;
};
CellSlot cell_slot(int cell_index, uint64_t grid_cells);

// The cells in run order. `tmpl` must have been parsed against `grid`.
std::vector<PlannedCell> plan_cells(const SweepPlanInput& input, const sweep::Grid& grid,
                                    const sweep::ArgvTemplate& tmpl);

// Marks as done every cell whose newest attempt completed with the same cell key (the cell's
// definition did not change), or with its legacy key; that attempt's row becomes the cell's job.
void mark_done(std::vector<PlannedCell>& cells, const std::vector<JobRecord>& attempts);

}  // namespace nodus::engine
