// The live view's frame: never taller than the terminal, finished cells folded, ETA and budget.

#include "engine/sweep_progress.h"

#include <gtest/gtest.h>

#include "core/job.h"
#include "engine/sweep_runner.h"

namespace nodus::engine {
namespace {

std::vector<PlannedCell> cells(int n) {
  std::vector<PlannedCell> out(n);
  for (int i = 0; i < n; ++i) {
    out[i].index = i;
    out[i].label = "i=" + std::to_string(i + 1);
  }
  return out;
}

TEST(SweepProgressFrame, FortyCellsFitTwentyRowsWithFinishedCellsFolded) {
  SweepProgress p("s1", false, false);
  auto cs = cells(40);
  p.begin(cs, 10.0);
  JobRecord job;
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3600;  // $1 a second
  for (int i = 0; i < 25; ++i) {
    job.id = i + 1;
    p.cell_started(cs[i], job);
    JobRecord done = job;
    done.state = i == 3 ? JobState::kFailed : JobState::kCompleted;
    done.cost = 0.1;
    p.cell_ended(cs[i], done);
  }
  for (int i = 25; i < 29; ++i) p.cell_started(cs[i], job);
  auto frame = p.frame(20, 130, unix_now() + 2);
  ASSERT_LE(frame.size(), 19u);
  EXPECT_NE(frame[0].find("s1: 40 cells, 4 running, 25 finished, 11 pending"), std::string::npos)
      << frame[0];
  EXPECT_NE(frame[0].find("of $10.00 budget"), std::string::npos) << frame[0];
  EXPECT_NE(frame[0].find("ETA ~"), std::string::npos) << frame[0];
  EXPECT_EQ(frame[1], "  25 finished: 24 completed 1 failed");
  int running = 0;
  for (const auto& l : frame) running += l.find("running") != std::string::npos;
  EXPECT_EQ(running, 1 + 4);  // the head line and the 4 running cells
  EXPECT_EQ(frame.back(), "  11 pending");
  for (const auto& l : frame) EXPECT_LE(l.size(), 129u);
  // A tiny terminal still gets a frame that fits.
  EXPECT_LE(p.frame(4, 30, unix_now()).size(), 3u);
  for (const auto& l : p.frame(4, 30, unix_now())) EXPECT_LE(l.size(), 29u);
}

TEST(SweepProgressFrame, FewCellsAreListedOneLineEach) {
  SweepProgress p("s2", false, false);
  auto cs = cells(3);
  p.begin(cs, std::nullopt);
  auto frame = p.frame(20, 100, unix_now());
  ASSERT_EQ(frame.size(), 4u);
  EXPECT_NE(frame[0].find("ETA -"), std::string::npos) << frame[0];
  EXPECT_NE(frame[3].find("i=3"), std::string::npos);
}

// Issue 29 point 5: after Ctrl-C the live view's last frame carried an ETA for cells that would
// never run ("ETA ~12.1s"). The final frame says the sweep ended and which cells did not run,
// and no longer moves with the clock.
TEST(SweepProgressFrame, TheFinalFrameAfterAnInterruptHasNoEtaAndNamesTheCellsNotRun) {
  SweepProgress p("s3", false, false);
  auto cs = cells(3);
  p.begin(cs, std::nullopt);
  JobRecord job;
  job.id = 1;
  p.cell_started(cs[0], job);
  JobRecord done = job;
  done.state = JobState::kCompleted;
  p.cell_ended(cs[0], done);
  job.id = 2;
  p.cell_started(cs[1], job);
  auto before = p.frame(20, 120, unix_now());
  EXPECT_NE(before[0].find("ETA ~"), std::string::npos) << before[0];
  JobRecord interrupted = job;
  interrupted.state = JobState::kCancelled;  // Ctrl-C
  p.cell_ended(cs[1], interrupted);
  p.end();
  auto last = p.frame(20, 120, unix_now());
  EXPECT_EQ(last[0].find("ETA"), std::string::npos) << last[0];
  EXPECT_NE(last[0].find("2 finished, 1 not run"), std::string::npos) << last[0];
  EXPECT_NE(last[0].find("ended"), std::string::npos) << last[0];
  EXPECT_NE(last[3].find("not run"), std::string::npos) << last[3];
  EXPECT_EQ(last[3].find("pending"), std::string::npos) << last[3];
  // Drawn an hour later, it is the same frame: the clock stopped at the end.
  EXPECT_EQ(p.frame(20, 120, unix_now() + 3600), last);
}

}  // namespace
}  // namespace nodus::engine
