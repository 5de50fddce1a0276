// A sweep as one Slurm job array on the real cluster: throttle, per-cell values, per-task states.

#include <gtest/gtest.h>

#include "backend/slurm/array.h"
#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;

TEST(SlurmClusterArray, FourCellsRunTwoAtATimeEachWithItsValues) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  SlurmArrays arrays(cluster_client(cluster_settings(dir)));
  ArraySpec spec;
  spec.name = "nodus-sweep-test-" + std::to_string(getpid()) + "-" +
              std::to_string(static_cast<int64_t>(unix_now() * 1000));
  for (int i = 0; i < 4; ++i)
    spec.cells.push_back({{"bash", "-c", "echo cell=$NODUS_PARAM_X; sleep 3"},
                          {{"NODUS_PARAM_X", std::to_string(i * 10)}}});
  spec.parallel = 2;
  spec.time_limit_minutes = 2;
  auto array = arrays.submit(spec);
  ASSERT_TRUE(array.ok()) << array.error().message;

  int most_running = 0;
  std::vector<ArrayTask> tasks;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < end) {
    auto now = arrays.tasks(*array, 4);
    ASSERT_TRUE(now.ok()) << now.error().message;
    tasks = *now;
    int running = 0, done = 0;
    for (const auto& t : tasks) {
      running += t.phase == Phase::kRunning;
      done += t.phase == Phase::kFinal;
    }
    most_running = std::max(most_running, running);
    if (done == 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_LE(most_running, 2);
  EXPECT_EQ(most_running, 2);  // the throttle allows 2, and 3 s tasks overlap
  ASSERT_EQ(tasks.size(), 4u);
  for (const auto& t : tasks) {
    ASSERT_TRUE(t.outcome) << "task " << t.index << " is " << t.state;
    EXPECT_EQ(t.outcome->exit_code, 0);
    EXPECT_GT(t.job_id, 0);
    EXPECT_EQ(dir.read(array->output_path(t.index)), "cell=" + std::to_string(t.index * 10) + "\n");
  }
}

TEST(SlurmClusterArray, CancellingStopsQueuedAndRunningTasks) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  SlurmArrays arrays(cluster_client(cluster_settings(dir)));
  ArraySpec spec;
  spec.name = "nodus-sweep-cancel-" + std::to_string(getpid()) + "-" +
              std::to_string(static_cast<int64_t>(unix_now() * 1000));
  for (int i = 0; i < 3; ++i) spec.cells.push_back({{"sleep", "120"}, {}});
  spec.parallel = 1;
  auto array = arrays.submit(spec);
  ASSERT_TRUE(array.ok()) << array.error().message;
  // Cancel the queued last task alone, then everything.
  auto tasks = arrays.tasks(*array, 3);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 3u);
  ASSERT_TRUE(arrays.cancel_task(tasks->at(2), "TERM").ok());
  ASSERT_TRUE(arrays.cancel(*array).ok());
  bool all_final = false;
  for (int i = 0; i < 50 && !all_final; ++i) {
    auto now = arrays.tasks(*array, 3);
    ASSERT_TRUE(now.ok());
    all_final = std::all_of(now->begin(), now->end(),
                            [](const ArrayTask& t) { return t.phase == Phase::kFinal; });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(all_final);
}

}  // namespace
}  // namespace nodus::backend::slurm
