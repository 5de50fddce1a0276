// Output: the log file, on_line, the line buffer's bound.

#include "backend/local/output.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "backend/local/local_backend.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

TEST(LocalOutput, BothStreamsReachTheLogAndLinesIncludingAnUnterminatedLastOne) {
  TempDir dir;
  auto backend = make_local_backend();
  JobRecord job = shell_job("echo out1; echo err1 >&2; printf 'no newline at end'");
  LaunchSpec spec;
  spec.log_path = dir.file("job.log");
  spec.attach = false;
  std::vector<std::string> lines;
  spec.on_line = [&](std::string_view l) { lines.emplace_back(l); };
  ASSERT_TRUE(backend->submit(job, spec).ok());
  EXPECT_EQ(wait_exit(*backend, job, 30s).outcome.exit_code, 0);

  std::string log = read_text(spec.log_path);
  EXPECT_NE(log.find("out1\n"), std::string::npos) << log;
  EXPECT_NE(log.find("err1\n"), std::string::npos) << log;
  EXPECT_NE(log.find("no newline at end"), std::string::npos) << log;
  EXPECT_EQ(log.size(), std::string("out1\nerr1\nno newline at end").size());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "out1"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "err1"), lines.end());
  EXPECT_EQ(lines.back(), "no newline at end");

  struct stat st;
  ASSERT_EQ(::stat(spec.log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(LocalOutput, StaleLogIsReplacedNotAppendedTo) {
  TempDir dir;
  write_text(dir.file("job.log"), "earlier attempt\n");
  auto backend = make_local_backend();
  JobRecord job = shell_job("echo again");
  LaunchSpec spec;
  spec.log_path = dir.file("job.log");
  spec.attach = false;
  ASSERT_TRUE(backend->submit(job, spec).ok());
  wait_exit(*backend, job, 30s);
  // A log left by an earlier store is replaced, never appended to (nor followed if a link).
  EXPECT_EQ(read_text(spec.log_path), "again\n");
}

TEST(LocalOutput, LinesArriveWhileTheJobRuns) {
  auto backend = make_local_backend();
  // The job waits for a file the test creates only after seeing the first line.
  TempDir dir;
  JobRecord job = shell_job("echo first; while [ ! -e " + dir.file("go") +
                            " ]; do sleep 0.01; done; echo second");
  LaunchSpec spec;
  spec.attach = false;
  std::vector<std::string> lines;
  spec.on_line = [&](std::string_view l) { lines.emplace_back(l); };
  ASSERT_TRUE(backend->submit(job, spec).ok());
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (lines.empty() && std::chrono::steady_clock::now() < deadline) {
    auto e = backend->wait(job, std::chrono::steady_clock::now() + 100ms, -1);
    ASSERT_TRUE(e.ok());
    ASSERT_NE(e->kind, Event::Kind::kExited);
  }
  ASSERT_EQ(lines, std::vector<std::string>{"first"});
  write_text(dir.file("go"), "");
  EXPECT_EQ(wait_exit(*backend, job, 30s).outcome.exit_code, 0);
  EXPECT_EQ(lines, (std::vector<std::string>{"first", "second"}));
}

size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(LocalOutput, FinishedJobsKeepNoDescriptorOpen) {
  // A sweep's supervisor runs many jobs with one backend.
  TempDir dir;
  auto backend = make_local_backend();
  const size_t before = open_descriptors();
  for (int i = 0; i < 20; ++i) {
    JobRecord job = shell_job("echo " + std::to_string(i));
    LaunchSpec spec;
    spec.log_path = dir.file("job" + std::to_string(i) + ".log");
    spec.attach = false;
    ASSERT_TRUE(backend->submit(job, spec).ok());
    wait_exit(*backend, job, 30s);
    // The supervisor always kills what outlived the main process; until then the job's
    // sentinel keeps its socket open.
    ASSERT_TRUE(backend->kill(job).ok());
  }
  EXPECT_EQ(open_descriptors(), before);
}

}  // namespace
}  // namespace nodus::backend::local
