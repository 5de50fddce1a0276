// The v0.0.38 JSON mapping, on answers recorded from slurmrestd 22.05.8 (tests/data/slurm).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/slurm/api.h"
#include "fake_http.h"

namespace nodus::backend::slurm {
namespace {

using testing::fixture;

const SlurmApi& api() {
  static auto a = std::move(*make_api("v0.0.38"));
  return *a;
}

SlurmJob only_job(const std::string& file) {
  auto jobs = api().parse_jobs(fixture(file));
  EXPECT_TRUE(jobs.ok()) << file;
  EXPECT_EQ(jobs->size(), 1u) << file;
  return jobs->at(0);
}

TEST(SlurmApiV0038, ReadsARunningJob) {
  SlurmJob j = only_job("job_running.json");
  EXPECT_EQ(j.job_id, 5);
  EXPECT_EQ(j.name, "run");
  EXPECT_EQ(j.state, "RUNNING");
  EXPECT_EQ(j.user_name, "nodus-restd");
  EXPECT_EQ(j.start_time, 1795966165);
  EXPECT_EQ(j.end_time, 1795966165 + 5 * 60);  // while running: when the time limit ends
  EXPECT_EQ(j.time_limit_minutes, 5);
  EXPECT_FALSE(j.array_task_id.has_value());
}

TEST(SlurmApiV0038, ReadsRawWaitStatusesOfFinishedJobs) {
  EXPECT_EQ(only_job("job_completed.json").exit_code, 0);
  EXPECT_EQ(only_job("job_failed_exit3.json").exit_code, 768);
  EXPECT_EQ(only_job("job_failed_exit3.json").state, "FAILED");
  EXPECT_EQ(only_job("job_cancelled.json").exit_code, 15);
  EXPECT_EQ(only_job("job_cancelled.json").state, "CANCELLED");
  EXPECT_EQ(only_job("job_signal_term.json").exit_code, 15);
}

TEST(SlurmApiV0038, ReadsAPendingJobWithoutStartTime) {
  SlurmJob j = only_job("job_pending.json");
  EXPECT_EQ(j.state, "PENDING");
  EXPECT_EQ(j.state_reason, "JobHeldUser");
  EXPECT_EQ(j.start_time, 0);
}

TEST(SlurmApiV0038, ReadsEveryTaskOfAnArray) {
  auto jobs = api().parse_jobs(fixture("array_running.json"));
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 3u);
  int with_task = 0;
  for (const auto& j : *jobs) {
    EXPECT_EQ(j.array_job_id, 8);
    if (j.array_task_id)
      ++with_task;
    else
      EXPECT_EQ(j.array_task_string, "2-3%2");
  }
  EXPECT_EQ(with_task, 2);
}

TEST(SlurmApiV0038, ReadsTheSubmittedJobId) {
  auto id = api().parse_submit(fixture("submit_ok.json"));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 2);
}

TEST(SlurmApiV0038, RejectedSubmitSaysSlurmsWords) {
  auto id = api().parse_submit(fixture("submit_error_2014.json"));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("Requested node configuration is not available (2014)"),
            std::string::npos)
      << id.error().message;
}

TEST(SlurmApiV0038, ErrorListsKeepCodesAndWords) {
  auto e2127 = api().errors(fixture("submit_error_2127.json"));
  EXPECT_EQ(to_string(e2127), "environment must be set (2127); Failure during parsing (9001)");
  auto e2017 = api().errors(fixture("job_unknown_2017.json"));
  ASSERT_EQ(e2017.size(), 1u);
  EXPECT_EQ(e2017[0].code, 2017);
  EXPECT_EQ(to_string(e2017), "Invalid job id specified: Unable to find JobId=99999 (2017)");
  EXPECT_TRUE(api().errors(fixture("job_running.json")).empty());
  EXPECT_TRUE(api().errors("not json").empty());
}

// Issue 28: an answer of nested brackets is refused at the depth limit, not built.
TEST(SlurmApiV0038, DeeplyNestedAnswersAreRefused) {
  std::string bomb = "{\"jobs\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto jobs = api().parse_jobs(bomb);
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(jobs.error().message.find("a job query with JSON nested deeper than 64 levels"),
            std::string::npos)
      << jobs.error().message;
  EXPECT_TRUE(api().errors("{\"errors\": [" + std::string(100, '[') + "]}").empty());
}

TEST(SlurmApiV0038, SubmitBodyHasWhatSlurmNeedsAndNothingElse) {
  SubmitRequest r;
  r.script = "#!/bin/bash\nexec 'true'\n";
  r.name = "nodus-1-2";
  r.working_dir = "/w";
  r.output_path = "/w/nodus-1-2.out";
  r.env = {{"PATH", "/bin"}, {"NODUS_JOB_ID", "1"}};
  auto body = nlohmann::json::parse(api().submit_body(r));
  EXPECT_EQ(body["script"], r.script);
  auto job = body["job"];
  EXPECT_EQ(job["name"], "nodus-1-2");
  EXPECT_EQ(job["current_working_directory"], "/w");
  EXPECT_EQ(job["standard_output"], "/w/nodus-1-2.out");
  EXPECT_TRUE(job["environment"].is_object());
  EXPECT_EQ(job["environment"]["NODUS_JOB_ID"], "1");
  EXPECT_EQ(job["open_mode"], "append");  // a requeued job's next run adds to its output
  // Unset options are left out: slurmrestd rejects unknown keys and nulls would be one.
  for (const char* key :
       {"time_limit", "gres", "container", "partition", "array", "nodes", "tasks_per_node"})
    EXPECT_FALSE(job.contains(key)) << key;

  r.time_limit_minutes = 3;
  r.gres = "gpu:h100:2";
  r.container = "/images/pytorch";
  r.partition = "gpu";
  r.array = "0-3%2";
  job = nlohmann::json::parse(api().submit_body(r))["job"];
  EXPECT_EQ(job["time_limit"], 3);
  EXPECT_EQ(job["gres"], "gpu:h100:2");
  EXPECT_EQ(job["container"], "/images/pytorch");
  EXPECT_EQ(job["partition"], "gpu");
  EXPECT_EQ(job["array"], "0-3%2");
  EXPECT_FALSE(job.contains("nodes"));  // one node: Slurm's default, left out

  r.nodes = 2;  // one task on each node
  job = nlohmann::json::parse(api().submit_body(r))["job"];
  EXPECT_EQ(job["nodes"], 2);
  EXPECT_EQ(job["tasks_per_node"], 1);
}

TEST(SlurmApiV0038, PathsCarryTheVersion) {
  EXPECT_EQ(api().submit_path(), "/slurm/v0.0.38/job/submit");
  EXPECT_EQ(api().job_path(42), "/slurm/v0.0.38/job/42");
  EXPECT_EQ(api().cancel_path("42", ""), "/slurm/v0.0.38/job/42");
  EXPECT_EQ(api().cancel_path("42_3", "TERM"), "/slurm/v0.0.38/job/42_3?signal=TERM");
}

TEST(SlurmApiV0038, UnknownVersionListsTheKnownOnes) {
  auto a = make_api("v0.0.41");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("v0.0.38"), std::string::npos);
}

TEST(SlurmApiV0038, AccountingListsEveryRunOfARequeuedJob) {
  // Job 156 ran 3 s, was requeued (`scontrol requeue`), and was cancelled while queued again.
  auto runs = api().parse_accounting(fixture("accounting_requeued.json"));
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ(runs->at(0).job_id, 156);
  EXPECT_EQ(runs->at(0).name, "wrap");
  EXPECT_EQ(runs->at(0).state, "REQUEUED");
  EXPECT_EQ(runs->at(0).start_time, 1796102702);
  EXPECT_EQ(runs->at(0).end_time, 1796102705);
  EXPECT_EQ(runs->at(1).state, "CANCELLED");
  EXPECT_EQ(runs->at(1).start_time, 0);  // never started again: null in the answer
  EXPECT_EQ(runs->at(1).end_time, 1796102732);
  EXPECT_EQ(api().accounting_path(156), "/slurmdb/v0.0.38/job/156");
}

TEST(SlurmApiV0038, AccountingExitCodesBecomeRawWaitStatuses) {
  auto runs = api().parse_accounting(fixture("accounting_signaled.json"));
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->at(0).state, "FAILED");
  EXPECT_EQ(runs->at(0).exit_code, 9);  // SIGNALED, signal_id 9: as /job/{id} writes SIGKILL
  auto bad = api().parse_accounting(R"({"errors":[]})");
  EXPECT_FALSE(bad.ok());
}

TEST(SlurmApiV0038, AccountingKeepsTheLastStepsEnd) {
  // Job 894 (the dev cluster): `sleep 300` suspended 4 s in (scontrol suspend), cancelled 12 s
  // later. The job's end is its suspension; its batch step ended at the cancel.
  auto runs = api().parse_accounting(fixture("accounting_suspended_cancelled.json"));
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->at(0).state, "CANCELLED");
  EXPECT_EQ(runs->at(0).start_time, 1796416737);
  EXPECT_EQ(runs->at(0).end_time, 1796416741);
  EXPECT_EQ(runs->at(0).last_step_end, 1796416753);
  auto no_steps = api().parse_accounting(fixture("accounting_requeued.json"));
  ASSERT_TRUE(no_steps.ok());
  EXPECT_EQ(no_steps->at(1).last_step_end, 0);  // cancelled while queued: it ran no step
}

}  // namespace
}  // namespace nodus::backend::slurm
