// Measured, with generous bounds for a loaded 2-core machine: how long after a deadline the
// whole tree is gone, and what starting a trivial job costs. Numbers go to stdout.

#include <gtest/gtest.h>
#include <spawn.h>

#include <algorithm>

#include "backend/local/local_backend.h"
#include "backend/local/process_tree.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double median_ms(std::vector<Clock::duration> v) {
  std::sort(v.begin(), v.end());
  return std::chrono::duration<double, std::milli>(v[v.size() / 2]).count();
}
double max_ms(const std::vector<Clock::duration>& v) {
  return std::chrono::duration<double, std::milli>(*std::max_element(v.begin(), v.end())).count();
}

TEST(LocalMeasure, WholeTreeIsGoneSoonAfterTheDeadline) {
  auto backend = make_local_backend();
  std::vector<Clock::duration> took;
  for (int i = 0; i < 20; ++i) {
    TempDir dir;
    const std::string p = dir.file("pids");
    // main + child + grandchild + setsid daemon + double-forked daemon + a TERM ignorer.
    JobRecord job =
        shell_job("P=" + p +
                  "; echo $$ >> $P\n"
                  "sh -c 'echo $$ >> '$P'; sleep 1000 & echo $! >> '$P'; wait' &\n"
                  "sh -c 'setsid sh -c \"echo \\$\\$ >> '$P'; exec sleep 1000\" &' &\n"
                  "sh -c 'trap \"\" TERM; echo $$ >> '$P'; exec sleep 1000' &\n"
                  "while [ $(wc -l < $P) -lt 5 ]; do sleep 0.01; done; echo ready; wait\n");
    LaunchSpec spec;
    spec.attach = false;
    bool ready = false;
    spec.on_line = [&](std::string_view l) { ready = ready || l == "ready"; };
    ASSERT_TRUE(backend->submit(job, spec).ok());
    auto limit = Clock::now() + 60s;
    while (!ready && Clock::now() < limit)
      ASSERT_TRUE(backend->wait(job, Clock::now() + 100ms, -1).ok());
    ASSERT_TRUE(ready);

    const auto deadline = Clock::now() + 50ms;
    auto e = backend->wait(job, deadline, -1);
    ASSERT_TRUE(e.ok());
    ASSERT_EQ(e->kind, Event::Kind::kDeadline);
    ASSERT_TRUE(backend->kill(job).ok());
    took.push_back(Clock::now() - deadline);
    for (pid_t pid : read_pids(p)) ASSERT_TRUE(gone(pid)) << pid;
  }
  std::cout << "[ measure  ] deadline -> whole tree (5 processes) gone: median " << median_ms(took)
            << " ms, max " << max_ms(took) << " ms over " << took.size() << " runs\n";
  EXPECT_LT(median_ms(took), 1000.0);
}

TEST(LocalMeasure, StartingTrueCostsLittle) {
  auto backend = make_local_backend();
  std::vector<Clock::duration> submit, to_exit;
  for (int i = 0; i < 100; ++i) {
    JobRecord job;
    job.argv = {"true"};
    LaunchSpec spec;
    spec.attach = false;
    const auto start = Clock::now();
    ASSERT_TRUE(backend->submit(job, spec).ok());
    submit.push_back(Clock::now() - start);
    Event e = wait_exit(*backend, job, 30s);
    to_exit.push_back(Clock::now() - start);
    ASSERT_EQ(e.outcome.exit_code, 0);
    ASSERT_TRUE(backend->kill(job).ok());
  }
  // The floor on this machine at this moment: posix_spawn + waitpid of the same binary.
  std::vector<Clock::duration> bare;
  for (int i = 0; i < 100; ++i) {
    const auto start = Clock::now();
    pid_t pid;
    char arg0[] = "true";
    char* argv[] = {arg0, nullptr};
    ASSERT_EQ(::posix_spawnp(&pid, "true", nullptr, nullptr, argv, environ), 0);
    ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
    bare.push_back(Clock::now() - start);
  }
  std::cout << "[ measure  ] posix_spawn+waitpid(true) on this machine now: median "
            << median_ms(bare) << " ms\n";
  std::cout << "[ measure  ] submit(true): median " << median_ms(submit)
            << " ms; submit -> exit observed: median " << median_ms(to_exit) << " ms, max "
            << max_ms(to_exit) << " ms over " << to_exit.size() << " runs\n";
  EXPECT_LT(median_ms(to_exit), 200.0);
}

}  // namespace
}  // namespace nodus::backend::local
