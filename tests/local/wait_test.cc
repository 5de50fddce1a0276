// wait(): a deadline is met to the millisecond, wake_fd interrupts it, an exit ends it.

#include <gtest/gtest.h>
#include <sys/eventfd.h>

#include <algorithm>

#include "backend/local/local_backend.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(LocalWait, ReturnsDeadlineWithin50msOfIt) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("exec sleep 60");
  ASSERT_TRUE(backend->submit(job, {}).ok());
  std::vector<Clock::duration> lateness;
  for (int i = 0; i < 5; ++i) {
    const auto deadline = Clock::now() + 200ms;
    auto e = backend->wait(job, deadline, -1);
    lateness.push_back(Clock::now() - deadline);
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_EQ(e->kind, Event::Kind::kDeadline);
    EXPECT_GE(lateness.back(), 0ms);
    EXPECT_LT(lateness.back(), 1s);  // a loaded machine may not schedule us for a while
  }
  // The median judges the mechanism (a sleep-and-check loop would be late every time).
  std::sort(lateness.begin(), lateness.end());
  EXPECT_LT(lateness[2], 50ms)
      << std::chrono::duration_cast<std::chrono::microseconds>(lateness[2]).count() << " us";
  ASSERT_TRUE(backend->kill(job).ok());
}

TEST(LocalWait, APassedDeadlineReturnsAtOnce) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("exec sleep 60");
  ASSERT_TRUE(backend->submit(job, {}).ok());
  const auto start = Clock::now();
  auto e = backend->wait(job, start - 1s, -1);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Event::Kind::kDeadline);
  EXPECT_LT(Clock::now() - start, 50ms);
  ASSERT_TRUE(backend->kill(job).ok());
}

TEST(LocalWait, WakeFdEndsTheWait) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("exec sleep 60");
  ASSERT_TRUE(backend->submit(job, {}).ok());
  int wake = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(wake, 0);
  std::thread waker([wake] {
    std::this_thread::sleep_for(100ms);
    uint64_t one = 1;
    (void)::write(wake, &one, sizeof one);
  });
  const auto start = Clock::now();
  auto e = backend->wait(job, start + 30s, wake);
  const auto took = Clock::now() - start;
  waker.join();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Event::Kind::kWoken);
  EXPECT_GE(took, 90ms);
  EXPECT_LT(took, 10s);
  ::close(wake);
  ASSERT_TRUE(backend->kill(job).ok());
}

TEST(LocalWait, ExitEndsTheWaitBeforeTheDeadline) {
  auto backend = make_local_backend();
  JobRecord job = shell_job("sleep 0.2; exit 7");
  ASSERT_TRUE(backend->submit(job, {}).ok());
  const auto start = Clock::now();
  auto e = backend->wait(job, start + 60s, -1);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Event::Kind::kExited);
  EXPECT_EQ(e->outcome.exit_code, 7);
  EXPECT_LT(Clock::now() - start, 20s);
  // Asking again gives the same outcome.
  auto again = backend->wait(job, Clock::now(), -1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, Event::Kind::kExited);
  EXPECT_EQ(again->outcome.exit_code, 7);
}

TEST(LocalWait, UnknownJobIsAnError) {
  auto backend = make_local_backend();
  JobRecord job;
  job.id = 42;
  job.backend_id = "1";
  auto e = backend->wait(job, Clock::now(), -1);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("not started by this nodus process"), std::string::npos);
}

}  // namespace
}  // namespace nodus::backend::local
