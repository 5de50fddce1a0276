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
