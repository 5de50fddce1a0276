// Planning a sweep's cells (engine/sweep_plan.h): the number a job sees in NODUS_SWEEP_CELL is
// the one ps and show give it, and --resume still knows cells stored before that was so.

#include "engine/sweep_plan.h"

#include <gtest/gtest.h>

#include "sweep/cell_key.h"

namespace nodus::engine {
namespace {

struct Planned {
  sweep::Grid grid;
  sweep::ArgvTemplate tmpl;
};

Planned planned(const std::vector<std::string>& specs) {
  auto grid = sweep::parse_grid(specs);
  EXPECT_TRUE(grid.ok());
  auto tmpl = sweep::ArgvTemplate::parse({"train", "--w", "{w}"}, *grid);
  EXPECT_TRUE(tmpl.ok());
  return {*grid, *tmpl};
}

TEST(PlanCells, TheJobSeesTheCellNumberPsAndShowGiveIt) {
  auto p = planned({"w=0,2,4"});
  SweepPlanInput input;
  input.repeat = 2;
  auto cells = plan_cells(input, p.grid, p.tmpl);
  ASSERT_EQ(cells.size(), 6u);
  for (const auto& c : cells) {
    // ps prints s3:<cell_index + 1> and show "cell <cell_index + 1>".
    EXPECT_EQ(c.env.at("NODUS_SWEEP_CELL"), std::to_string(c.job.cell_index + 1)) << c.label;
    EXPECT_EQ(c.job.env.at("NODUS_SWEEP_CELL"), c.env.at("NODUS_SWEEP_CELL"));
  }
  EXPECT_EQ(cells[0].env.at("NODUS_SWEEP_CELL"), "1");
  EXPECT_EQ(cells[4].env.at("NODUS_SWEEP_CELL"), "5");  // w=2, its second run
  EXPECT_EQ(cells[4].env.at("NODUS_SWEEP_REPEAT"), "2");
}

// sweep --gpu H100:{g}: each cell's job starts from its own value's base, and its key (what
// --resume matches) holds its own GPUs.
TEST(PlanCells, EachCellTakesTheGpusItsValueOfTheTemplateGives) {
  auto grid = sweep::parse_grid({"w=0,2", "g=1,2"});
  ASSERT_TRUE(grid.ok());
  auto tmpl = sweep::ArgvTemplate::parse({"train", "--w", "{w}"}, *grid);
  ASSERT_TRUE(tmpl.ok());
  auto gpu = sweep::ArgvTemplate::parse({"H100:{g}"}, *grid, "--gpu");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(cell_gpu_values(*gpu, *grid, {}), (std::vector<std::string>{"H100:1", "H100:2"}));
  EXPECT_EQ(cell_gpu_values(*gpu, *grid, {1}), (std::vector<std::string>{"H100:2"}));
  SweepPlanInput input;
  input.gpu_template = *gpu;
  for (int n : {1, 2}) {
    JobRecord base;
    base.gpu_type = "H100";
    base.gpu_count = n;
    base.rate_per_gpu_hour = 2.5;
    input.gpu_bases["H100:" + std::to_string(n)] = {base, GpuRequest{"H100", n}};
  }
  auto cells = plan_cells(input, *grid, *tmpl);
  ASSERT_EQ(cells.size(), 4u);
  std::vector<int> counts;
  for (const auto& c : cells) counts.push_back(c.job.gpu_count);
  EXPECT_EQ(counts, (std::vector<int>{1, 2, 1, 2}));  // the last axis varies fastest
  EXPECT_EQ(cells[1].job.argv, cells[0].job.argv);
  EXPECT_NE(cells[1].job.cell_key, cells[0].job.cell_key);
  auto other_env = cells[1].env;
  EXPECT_EQ(cells[1].job.cell_key,
            sweep::cell_key({cells[1].job.argv, other_env, GpuRequest{"H100", 2}, std::nullopt,
                             cells[1].job.timeout_ms}));
  // A placeholder error names --gpu, not a command argument.
  auto bad = sweep::ArgvTemplate::parse({"H100:{x}"}, *grid, "--gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("in --gpu 'H100:{x}'"), std::string::npos)
      << bad.error().message;
}

TEST(MarkDone, ACellCompletedUnderTheOldZeroBasedNumberIsNotRunAgain) {
  auto p = planned({"w=0,2"});
  SweepPlanInput input;
  auto cells = plan_cells(input, p.grid, p.tmpl);
  ASSERT_EQ(cells.size(), 2u);
  // What an older nodus stored for the second cell: the same cell, NODUS_SWEEP_CELL=1.
  auto old_env = cells[1].env;
  old_env["NODUS_SWEEP_CELL"] = "1";
  JobRecord old;
  old.cell_index = 1;
  old.state = JobState::kCompleted;
  old.cell_key = sweep::cell_key({cells[1].job.argv, old_env, input.gpu, input.max_cost, {}});
  ASSERT_NE(old.cell_key, cells[1].job.cell_key);  // the number is part of what the cell is

  // The same key on the first cell's index is another cell: it stays to run.
  JobRecord elsewhere = old;
  elsewhere.cell_index = 0;
  mark_done(cells, {elsewhere, old});
  EXPECT_FALSE(cells[0].done);
  EXPECT_TRUE(cells[1].done);

  // A key that matches neither (the command changed) is run again.
  auto fresh = plan_cells(input, p.grid, p.tmpl);
  JobRecord changed = old;
  changed.cell_key = std::string(64, '0');
  mark_done(fresh, {changed});
  EXPECT_FALSE(fresh[1].done);
}

}  // namespace
}  // namespace nodus::engine
