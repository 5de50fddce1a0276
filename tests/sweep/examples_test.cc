// The sweep pieces against real processes: examples/fake_train.py and examples/train.py run
// without a shell, with a cell's argv and env, and their metrics go through the real reader.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sweep/compare.h"
#include "sweep/metric_regex.h"
#include "sweep/metrics.h"
#include "sweep/placeholders.h"

extern char** environ;

namespace nodus::sweep {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int exit_code = -1;
  std::string out;
  double wall_s = 0;
};

// Runs argv directly (posix_spawnp, no shell) with extra environment variables.
Ran run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) env_text.emplace_back(*e);
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env_text) cenv.push_back(const_cast<char*>(e.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);

  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  Ran ran;
  int rc = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return ran;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) ran.out.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ran.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return ran;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "nodus-sweep-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

const std::string kExamples = std::string(NODUS_SOURCE_DIR) + "/examples/";

TEST(SweepExamples, HostileValuesReachTheProcessAsOneArgument) {
  auto grid = parse_grid({"v=$(touch pwned),;reboot,`id`,a b,--x=1 --y"});
  ASSERT_TRUE(grid.ok());
  auto t = ArgvTemplate::parse(
      {"python3", "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", "{v}"}, *grid);
  ASSERT_TRUE(t.ok());
  for (const auto& cell : expand(*grid)) {
    Ran ran = run(t->resolve(cell), cell_env(cell));
    ASSERT_EQ(ran.exit_code, 0);
    EXPECT_EQ(nlohmann::json::parse(ran.out), nlohmann::json::array({cell.params[0].value}));
  }
  EXPECT_FALSE(fs::exists("pwned"));
}

TEST(SweepExamples, FakeTrainMetricsAndRegexAgree) {
  TempDir dir;
  std::string metrics = dir / "metrics.jsonl";
  Ran ran = run({"python3", kExamples + "fake_train.py", "--num-workers", "4", "--steps", "10",
                 "--report-every", "2", "--step-seconds", "0", "--hf-summary"},
                {{"NODUS_METRICS", metrics}});
  ASSERT_EQ(ran.exit_code, 0) << ran.out;

  MetricsFileReader reader(metrics);
  auto points = reader.finish(1);
  EXPECT_EQ(reader.stats().lines, 5u);
  EXPECT_EQ(reader.stats().malformed, 0u);
  EXPECT_DOUBLE_EQ(*steady_mean(points, kDefaultThroughputMetric), 4152);
  EXPECT_NEAR(*steady_mean(points, "data_wait"), 1 - 4152.0 / 8400, 1e-4);

  auto rs = parse_metric_regexes({"samples_per_sec='train_samples_per_second': ([0-9.eE+-]+)"});
  ASSERT_TRUE(rs.ok());
  std::vector<MetricPoint> from_output;
  size_t pos = 0;
  while (pos < ran.out.size()) {
    size_t nl = ran.out.find('\n', pos);
    auto line = std::string_view(ran.out).substr(pos, nl - pos);
    for (auto& p : extract_metrics(*rs, line, 1)) from_output.push_back(p);
    pos = nl == std::string::npos ? ran.out.size() : nl + 1;
  }
  ASSERT_EQ(from_output.size(), 1u);
  EXPECT_DOUBLE_EQ(from_output[0].value, 4152);
}

TEST(SweepExamples, FakeTrainSweepPicksTheMostWorkers) {
  TempDir dir;
  auto grid = parse_grid({"num_workers=0,4,14"});
  ASSERT_TRUE(grid.ok());
  auto t = ArgvTemplate::parse({"python3", kExamples + "fake_train.py", "--num-workers",
                                "{num_workers}", "--steps", "6", "--step-seconds", "0.01"},
                               *grid);
  ASSERT_TRUE(t.ok());
  std::vector<CellResult> results;
  for (const auto& cell : expand(*grid)) {
    auto env = cell_env(cell);
    env["NODUS_METRICS"] = dir / ("cell" + std::to_string(cell.index) + ".jsonl");
    Ran ran = run(t->resolve(cell), env);
    MetricsFileReader reader(env["NODUS_METRICS"]);
    auto points = reader.finish(1);
    CellResult r;
    r.index = cell.index;
    r.params = cell.params;
    r.state = ran.exit_code == 0 ? "completed" : "failed";
    r.exit_code = ran.exit_code;
    r.wall_s = ran.wall_s;
    r.gpu_seconds = ran.wall_s;
    r.cost = ran.wall_s * 2.60 / 3600;
    r.throughput = steady_mean(points, kDefaultThroughputMetric);
    r.data_wait = steady_mean(points, "data_wait");
    results.push_back(r);
  }
  auto table = compare_table(results, {});
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->raw(2)["best"], true) << table->render(Format::kTable);
  EXPECT_EQ(summary_sentence(results).rfind("num_workers=14: ", 0), 0u)
      << summary_sentence(results);
}

// examples/train.py needs torch; Debian's is under /usr/bin/python3, which `python3` may not be.
std::string python_with_torch() {
  for (std::string py : {"/usr/bin/python3", "python3"})
    if (run({py, "-c", "import torch"}, {}).exit_code == 0) return py;
  return "";
}

TEST(SweepExamples, TrainPyReportsThroughputAndDataWait) {
  std::string py = python_with_torch();
  if (py.empty()) GTEST_SKIP() << "no python3 with torch";
  TempDir dir;
  std::string metrics = dir / "metrics.jsonl";
  Ran ran = run({py, kExamples + "train.py", "--num-workers", "1", "--steps", "4", "--warmup", "1",
                 "--batch-size", "8", "--image-size", "32", "--source-size", "64", "--report-every",
                 "2", "--device", "cpu"},
                {{"NODUS_METRICS", metrics}});
  ASSERT_EQ(ran.exit_code, 0) << ran.out;
  EXPECT_NE(ran.out.find("done: 4 steps of 8 on cpu"), std::string::npos) << ran.out;

  MetricsFileReader reader(metrics);
  auto points = reader.finish(1);
  EXPECT_EQ(reader.stats().lines, 2u);
  EXPECT_EQ(reader.stats().malformed, 0u);
  auto rate = steady_mean(points, kDefaultThroughputMetric);
  auto wait = steady_mean(points, "data_wait");
  ASSERT_TRUE(rate && wait);
  EXPECT_GT(*rate, 0);
  EXPECT_GE(*wait, 0);
  EXPECT_LE(*wait, 1);
}

}  // namespace
}  // namespace nodus::sweep
