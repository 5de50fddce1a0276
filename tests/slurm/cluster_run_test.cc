// Jobs on the real local cluster: output, exit codes, GPUs, values as data, wrong GPU types.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "backend/slurm/job_script.h"
#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;

TEST(SlurmClusterRun, ExitCodeOutputAndGpusComeBack) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  JobRecord job = new_job({"bash", "-c",
                           "echo out-line; echo err-line >&2; echo \"gpus=$CUDA_VISIBLE_DEVICES\";"
                           " echo \"job=$NODUS_JOB_ID\"; exit 3"},
                          dir);
  job.gpu_type = "H100-SXM";
  job.gpu_count = 2;
  LaunchSpec spec;
  spec.env = {{"NODUS_JOB_ID", std::to_string(job.id)}};
  spec.attach = false;
  std::vector<std::string> lines;
  spec.on_line = [&](std::string_view line) { lines.emplace_back(line); };

  double before = unix_now();
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_FALSE(job.backend_id.empty());
  EXPECT_EQ(job.log_path, dir.path() + "/" + slurm_job_name(job, settings) + ".out");
  auto outcome = wait_to_end(*backend, job, 60);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->exit_code, 3);
  EXPECT_FALSE(outcome->signal.has_value());
  EXPECT_GE(outcome->started_at, std::floor(before));
  EXPECT_LE(outcome->started_at, outcome->ended_at);
  ASSERT_TRUE(job.started_at.has_value());  // kStarted came first

  ASSERT_EQ(lines.size(), 4u) << dir.read(job.log_path);
  EXPECT_EQ(lines[0], "out-line");
  EXPECT_EQ(lines[1], "err-line");
  // Two of the fake H100s (0-3); which two depends on what else runs.
  EXPECT_EQ(lines[2].rfind("gpus=", 0), 0u);
  EXPECT_EQ(std::count(lines[2].begin(), lines[2].end(), ','), 1) << lines[2];
  EXPECT_EQ(lines[3], "job=" + std::to_string(job.id));
  EXPECT_NE(dir.read(job.log_path).find("err-line"), std::string::npos);
}

TEST(SlurmClusterRun, ArgumentsReachTheProgramAsData) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto backend = cluster_backend(cluster_settings(dir));
  std::vector<std::string> args = {"two words", "it's", "$(touch /tmp/nodus-injected)", "`id`",
                                   "a\"b;c|d"};
  std::vector<std::string> argv = {"printf", "%s\\n"};
  argv.insert(argv.end(), args.begin(), args.end());
  JobRecord job = new_job(argv, dir);
  ASSERT_TRUE(backend->submit(job, quiet()).ok());
  auto outcome = wait_to_end(*backend, job, 60);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->exit_code, 0);
  std::string expected;
  for (const auto& a : args) expected += a + "\n";
  EXPECT_EQ(dir.read(job.log_path), expected);
}

TEST(SlurmClusterRun, MissingProgramExits127) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto backend = cluster_backend(cluster_settings(dir));
  JobRecord job = new_job({"nodus-no-such-program"}, dir);
  ASSERT_TRUE(backend->submit(job, quiet()).ok());
  auto outcome = wait_to_end(*backend, job, 60);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->exit_code, 127);
}

TEST(SlurmClusterRun, UnavailableGpuTypeIsRejectedInSlurmsWords) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto backend = cluster_backend(cluster_settings(dir));
  for (auto [type, count] : {std::pair<std::string, int>{"A100", 1}, {"H100-SXM", 5}}) {
    JobRecord job = new_job({"true"}, dir);
    job.gpu_type = type;
    job.gpu_count = count;
    auto r = backend->submit(job, quiet());
    ASSERT_FALSE(r.ok()) << type;
    EXPECT_EQ(r.error().exit_code, 125);
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_NE(r.error().message.find("Requested node configuration is not available (2014)"),
              std::string::npos)
        << r.error().message;
    EXPECT_TRUE(job.backend_id.empty());
  }
}

TEST(SlurmClusterRun, TimeLimitIsSentAsTheSafetyNet) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  auto rest = cluster_client(settings);
  JobRecord job = new_job({"sleep", "30"}, dir);
  job.timeout_ms = 150'000;  // 2.5 min -> 3
  ASSERT_TRUE(backend->submit(job, quiet()).ok());
  auto record = poll_until(
      *rest, std::stoll(job.backend_id), [](const SlurmJob&) { return true; }, 10);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->time_limit_minutes, 3);
  EXPECT_EQ(record->name, slurm_job_name(job, settings));
  ASSERT_TRUE(backend->kill(job).ok());
}

// The job runs as slurmrestd's user (nodus-restd), not as this test (root): a NODUS_METRICS in the
// submitter's private store is one it could not write. It gets a file of its own beside its
// output instead, 0600 and its own, that nodus reads.
TEST(SlurmClusterRun, MetricsOfAJobRunningAsAnotherUserReachNodusAndStayPrivate) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  JobRecord job = new_job({"bash", "-c",
                           "id -u; stat -c %a \"$NODUS_METRICS\"; "
                           "echo '{\"step\": 1, \"loss\": 0.5}' >> \"$NODUS_METRICS\""},
                          dir);
  const std::string in_store = "/nonexistent-store/metrics/" + std::to_string(job.id) + ".jsonl";
  job.metrics_path = in_store;
  LaunchSpec spec = quiet();
  spec.env = {{"NODUS_METRICS", in_store}};
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_EQ(job.metrics_path, metrics_path(settings, job));
  auto outcome = wait_to_end(*backend, job, 60);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->exit_code, 0) << dir.read(job.log_path);
  std::string out = dir.read(job.log_path);
  auto newline = out.find('\n');
  ASSERT_NE(newline, std::string::npos) << out;
  EXPECT_NE(std::stoi(out.substr(0, newline)), static_cast<int>(getuid())) << "the job ran as us";
  EXPECT_EQ(out.substr(newline + 1, 4), "600\n") << out;
  EXPECT_EQ(dir.read(job.metrics_path), "{\"step\": 1, \"loss\": 0.5}\n");
  struct stat st {};
  ASSERT_EQ(::stat(job.metrics_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(st.st_uid, getuid());
}

TEST(SlurmClusterRun, AMetricsPathSomeoneElsePreparedIsNotUsed) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  JobRecord job = new_job({"bash", "-c", "echo \"metrics=${NODUS_METRICS-unset}\""}, dir);
  // Another user of the shared folder links the job's metrics name to a file of theirs.
  std::string victim = dir.path() + "/victim";
  { std::ofstream(victim) << "theirs\n"; }
  ASSERT_EQ(::symlink(victim.c_str(), metrics_path(settings, job).c_str()), 0);
  LaunchSpec spec = quiet();
  spec.env = {{"NODUS_METRICS", "/nonexistent-store/metrics/1.jsonl"}};
  ASSERT_TRUE(backend->submit(job, spec).ok());
  auto outcome = wait_to_end(*backend, job, 60);
  ASSERT_TRUE(outcome);
  std::string out = dir.read(job.log_path);
  EXPECT_NE(out.find("is not this job's own file"), std::string::npos) << out;
  EXPECT_NE(out.find("metrics=unset"), std::string::npos) << out;
  EXPECT_EQ(dir.read("victim"), "theirs\n");
}

}  // namespace
}  // namespace nodus::backend::slurm
