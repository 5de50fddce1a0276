// OutputFollower stays bounded whatever the job writes: a long line without a newline reaches
// on_line in pieces, and one poll reads a bounded amount.

#include "backend/slurm/output_follower.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace nodus::backend::slurm {
namespace {

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

}  // namespace
}  // namespace nodus::backend::slurm
