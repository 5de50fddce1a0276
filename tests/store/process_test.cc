// process_start_time / process_alive: the pid + start time pair that names a supervisor. (The
// /proc/<pid>/stat parsing under them is core/proc.h's, tested in tests/telemetry.)

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include "store/store.h"
#include "store_test_util.h"

namespace nodus::store {
namespace {

TEST(ProcessAlive, ThisProcessIsAliveOnlyWithItsOwnStartTime) {
  int64_t start = process_start_time(::getpid());
  ASSERT_GT(start, 0);
  EXPECT_TRUE(process_alive(::getpid(), start));
  EXPECT_FALSE(process_alive(::getpid(), start + 1));  // a reused pid is another process
  EXPECT_FALSE(process_alive(::getpid(), 0));
  EXPECT_FALSE(process_alive(0, start));
  EXPECT_FALSE(process_alive(-1, start));
  EXPECT_EQ(process_start_time(-5), 0);
}

TEST(ProcessAlive, AChildWithSpacesAndParenthesesInItsNameIsFound) {
  int go[2], ready[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = testing::spawn([&] {
    ::prctl(PR_SET_NAME, "a) b (c) d", 0, 0, 0);
    char c = 'x';
    if (::write(ready[1], &c, 1) != 1) return false;
    return ::read(go[0], &c, 1) == 1;  // wait until the parent has looked
  });
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  int64_t start = process_start_time(child);
  // Started after us: a misparse (splitting at the first ')') would read another field.
  EXPECT_GE(start, process_start_time(::getpid()));
  EXPECT_TRUE(process_alive(child, start));
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  EXPECT_EQ(testing::wait_exit(child), 0);
  EXPECT_FALSE(process_alive(child, start));  // gone (and reaped)
  for (int fd : {go[0], go[1], ready[0], ready[1]}) ::close(fd);
}

}  // namespace
}  // namespace nodus::store
