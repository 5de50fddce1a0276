// Sweep arrays: the task table inside the script, and reading per-task states.

#include "backend/slurm/array.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "fake_http.h"

namespace nodus::backend::slurm {
namespace {

std::string run_task(const std::string& script, int task) {
  char path[] = "/tmp/nodus-slurm-array-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::ofstream(path) << script;
  std::string cmd = "SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " bash " + path + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  unlink(path);
  return out + "|" + std::to_string(WEXITSTATUS(status));
}

TEST(SlurmArrayTasks, TaskStringsExpandToIndices) {
  EXPECT_EQ(expand_task_string("2-3%2"), (std::vector<int>{2, 3}));
  EXPECT_EQ(expand_task_string("0,2,5-7"), (std::vector<int>{0, 2, 5, 6, 7}));
  EXPECT_EQ(expand_task_string("0-9:4"), (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(expand_task_string("4"), (std::vector<int>{4}));
  EXPECT_TRUE(expand_task_string("").empty());
}

TEST(SlurmArrayTasks, EachTaskRunsItsOwnCellWithValuesAsData) {
  std::vector<ArrayCell> cells = {
      {{"bash", "-c", "echo \"$0 x=$NODUS_PARAM_X\"", "zero"}, {{"NODUS_PARAM_X", "4"}}},
      {{"bash", "-c", "echo \"$0 x=$NODUS_PARAM_X\"; exit 3", "one"},
       {{"NODUS_PARAM_X", "it's $(id) `x`"}}},
  };
  auto script = array_script(cells);
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(run_task(*script, 0), "zero x=4\n|0");
  EXPECT_EQ(run_task(*script, 1), "one x=it's $(id) `x`\n|3");
  EXPECT_EQ(run_task(*script, 2), "nodus: no sweep cell for array task 2\n|125");
}

TEST(SlurmArrayTasks, BadCellsAreRejected) {
  EXPECT_FALSE(array_script({{{}, {}}}).ok());
  auto bad_name = array_script({{{"true"}, {{"A-B", "1"}}}});
  ASSERT_FALSE(bad_name.ok());
  EXPECT_NE(bad_name.error().message.find("'A-B'"), std::string::npos);
}

TEST(SlurmArrayTasks, RecordsBecomeOneEntryPerCell) {
  auto api = std::move(*make_api("v0.0.38"));
  auto records = api->parse_jobs(testing::fixture("array_running.json"));
  ASSERT_TRUE(records.ok());
  auto tasks = tasks_from_records(*records, 8, 4);
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[0].index, 0);
  EXPECT_EQ(tasks[0].job_id, 9);
  EXPECT_EQ(tasks[0].phase, Phase::kRunning);
  EXPECT_GT(tasks[0].started_at, 0);
  EXPECT_EQ(tasks[1].job_id, 10);
  EXPECT_EQ(tasks[2].phase, Phase::kQueued);
  EXPECT_EQ(tasks[2].job_id, 0);
  EXPECT_EQ(tasks[3].phase, Phase::kQueued);
  EXPECT_EQ(tasks[3].array_id, 8);
  EXPECT_TRUE(tasks_from_records(*records, 123, 4).empty());
}

TEST(SlurmArrayTasks, OutputPathsAreKnownBeforeTasksStart) {
  ArrayJob a;
  a.name = "nodus-sweep-3-1";
  a.output_dir = "/w";
  EXPECT_EQ(a.output_path(2), "/w/nodus-sweep-3-1-2.out");
}

}  // namespace
}  // namespace nodus::backend::slurm
