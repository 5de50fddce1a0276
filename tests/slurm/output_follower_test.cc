// OutputFollower stays bounded whatever the job writes: a long line without a newline reaches
// on_line in pieces, and one poll reads a bounded amount. The output file is the job's: a FIFO
// or a symlink to /dev/zero in its place is refused, never waited on or read without end.

#include "backend/slurm/output_follower.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "temp_dir.h"

namespace nodus::backend::slurm {
namespace {

using ::nodus::testing::TempDir;

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

TEST(SlurmOutputFollower, LineWithoutNewlineKeepsMemoryBounded) {
  char path[] = "/tmp/nodus-follower-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string block(1 << 20, 'x');
  const int mib = 64;
  for (int i = 0; i < mib; ++i)
    ASSERT_EQ(write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  close(fd);

  long before = max_rss_kb();
  size_t pieces = 0, total = 0, longest = 0;
  OutputFollower follower(path, false, [&](std::string_view line) {
    ++pieces;
    total += line.size();
    longest = std::max(longest, line.size());
  });
  follower.poll();
  EXPECT_LE(total, static_cast<size_t>(OutputFollower::kMaxReadPerPoll));  // one poll: bounded
  follower.finish();
  unlink(path);
  EXPECT_EQ(total, static_cast<size_t>(mib) << 20);
  EXPECT_LE(longest, OutputFollower::kMaxLine);
  EXPECT_GE(pieces, (static_cast<size_t>(mib) << 20) / OutputFollower::kMaxLine);
  EXPECT_LT(max_rss_kb() - before, 16 * 1024) << "memory grew with the line";
}

// Runs `body` in a child process and returns what it wrote to its pipe, or nullopt if it had not
// finished after `seconds` (it is killed then): a follower stuck in open() or in an endless read
// must fail the test, not hang it.
std::optional<std::string> in_child_within(double seconds,
                                           const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out = body();
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool done = false;
  while (!done) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0)
      done = true;
    else
      out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (!done) kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  if (!done) return std::nullopt;
  return out;
}

// Follows `path` as the supervisor does (poll a few times, then finish) and reports the bytes
// it got and why it refused the file.
std::string follow(const std::string& path, bool echo) {
  size_t bytes = 0;
  OutputFollower follower(path, echo, [&](std::string_view line) { bytes += line.size(); });
  for (int i = 0; i < 3; ++i) follower.poll();
  follower.finish();
  return std::to_string(bytes) + " " + follower.refused();
}

TEST(SlurmOutputFollower, AFifoInPlaceOfTheOutputIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string path = dir.path() + "/job.out";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto got = in_child_within(5, [&] { return follow(path, false); });
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(got) << "the follower blocked on a FIFO with no writer";
  EXPECT_LT(took, 1.0);
  EXPECT_EQ(got->rfind("0 ", 0), 0u) << *got;
  EXPECT_NE(got->find("is a FIFO: not read"), std::string::npos) << *got;
}

TEST(SlurmOutputFollower, ASymlinkToDevZeroIsRefusedNotReadForever) {
  TempDir dir;
  const std::string path = dir.path() + "/job.out";
  ASSERT_EQ(symlink("/dev/zero", path.c_str()), 0);
  // Echoing too: nodus's own stdout must not be flooded (the child's stdout is this test's).
  auto got = in_child_within(5, [&] {
    if (!freopen("/dev/null", "w", stdout)) return std::string("no /dev/null");
    return follow(path, true);
  });
  ASSERT_TRUE(got) << "the follower read /dev/zero without end";
  EXPECT_EQ(got->rfind("0 ", 0), 0u) << *got;
  EXPECT_NE(got->find("is a symbolic link: not read"), std::string::npos) << *got;
}

TEST(SlurmOutputFollower, OutputReplacedByAFifoMidJobStopsTheFollowingThere) {
  TempDir dir;
  const std::string path = dir.path() + "/job.out";
  auto got = in_child_within(5, [&] {
    size_t bytes = 0;
    OutputFollower follower(path, false, [&](std::string_view line) { bytes += line.size(); });
    FILE* f = fopen(path.c_str(), "w");
    fputs("first line\n", f);
    fclose(f);
    follower.poll();
    unlink(path.c_str());
    mkfifo(path.c_str(), 0600);
    follower.poll();
    follower.finish();
    return std::to_string(bytes) + " " + follower.refused();
  });
  ASSERT_TRUE(got) << "the follower blocked on the FIFO that replaced the output";
  EXPECT_EQ(got->rfind("10 ", 0), 0u) << *got;  // "first line", then nothing more
  EXPECT_NE(got->find("is a FIFO"), std::string::npos) << *got;
}

}  // namespace
}  // namespace nodus::backend::slurm
