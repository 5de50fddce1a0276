// The one place a job's state changes (core/lifecycle.h): what an end carries, and what a
// move may not undo.

#include "core/lifecycle.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace nodus {
namespace {

TEST(Lifecycle, MovesAJobThatHasNotEndedOnly) {
  JobRecord job;
  EXPECT_EQ(job.state, JobState::kWaiting);
  EXPECT_TRUE(move_job(job, JobState::kStarting));
  EXPECT_TRUE(move_job(job, JobState::kRunning));
  EXPECT_TRUE(move_job(job, JobState::kWaiting));  // requeued by its cluster
  EXPECT_EQ(job.state, JobState::kWaiting);
  EXPECT_FALSE(move_job(job, JobState::kCompleted));  // an end is end_job's
  EXPECT_EQ(job.state, JobState::kWaiting);
  end_job(job, {JobState::kStopped, 100.0});
  EXPECT_FALSE(move_job(job, JobState::kRunning));  // an ended job keeps its end
  EXPECT_EQ(job.state, JobState::kStopped);
}

TEST(Lifecycle, AFailedJobKeepsItsOwnStatusEveryOtherEndTakesTheTables) {
  JobRecord job;
  end_job(job, {JobState::kFailed, 1.0, 7});
  EXPECT_EQ(job.exit_code, 7);
  JobRecord unknown;
  end_job(unknown, {JobState::kFailed, 1.0});
  EXPECT_EQ(unknown.exit_code, 1);
  // A status the backend saw is not the exit code of a job nodus stopped: the table's is.
  const std::pair<JobState, int> table[] = {{JobState::kCompleted, 0}, {JobState::kTimeout, 124},
                                            {JobState::kCostCap, 122}, {JobState::kBudget, 122},
                                            {JobState::kStopped, 143}, {JobState::kCancelled, 130},
                                            {JobState::kLost, 125},    {JobState::kTampered, 123}};
  for (auto [state, code] : table) {
    JobRecord j;
    end_job(j, {state, 1.0, 137});
    EXPECT_EQ(j.exit_code, code) << to_string(state);
    EXPECT_EQ(j.exit_code, exit_status_for(j)) << to_string(state);
  }
}

TEST(Lifecycle, AnEndHasATimeTheOneGivenElseTheJobsElseNow) {
  JobRecord given;
  given.ended_at = 5.0;
  end_job(given, {JobState::kCompleted, 9.0});
  EXPECT_EQ(given.ended_at, 9.0);
  JobRecord kept;
  kept.ended_at = 5.0;
  end_job(kept, {JobState::kStopped});
  EXPECT_EQ(kept.ended_at, 5.0);
  JobRecord now;
  const double before = unix_now();
  end_job(now, {JobState::kLost});
  ASSERT_TRUE(now.ended_at.has_value());
  EXPECT_GE(*now.ended_at, before);
  EXPECT_LE(*now.ended_at, unix_now());
}

TEST(Lifecycle, TheNoteIsAddedToNeverReplacedNorRepeated) {
  JobRecord job;
  job.note = "cgroup /sys/fs/cgroup/nodus/job-1";
  end_job(job, {JobState::kFailed, 1.0, 126, "cannot run 'x': permission denied"});
  EXPECT_EQ(job.note, "cgroup /sys/fs/cgroup/nodus/job-1; cannot run 'x': permission denied");
  add_note(job, "cannot run 'x': permission denied");
  EXPECT_EQ(job.note, "cgroup /sys/fs/cgroup/nodus/job-1; cannot run 'x': permission denied");
  add_note(job, "");
  EXPECT_EQ(job.note, "cgroup /sys/fs/cgroup/nodus/job-1; cannot run 'x': permission denied");
}

TEST(Lifecycle, EndingInAStateThatIsNoEndIsRefused) {
  JobRecord job;
  EXPECT_THROW(end_job(job, {JobState::kRunning, 1.0}), std::logic_error);
  EXPECT_EQ(job.state, JobState::kWaiting);
  EXPECT_FALSE(job.ended_at.has_value());
}

}  // namespace
}  // namespace nodus
