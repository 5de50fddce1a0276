// Killing the whole tree: children, grandchildren, setsid children, double-forked daemons and
// processes that ignore SIGTERM all go; select_tree's rule on synthetic process lists.

#include <gtest/gtest.h>

#include "backend/local/local_backend.h"
#include "backend/local/process_tree.h"
#include "local_test_util.h"

namespace nodus::backend::local {
namespace {

using namespace testing;  // NOLINT
using namespace std::chrono_literals;

// The tree's members that still run (zombies are dead already), sorted.
std::vector<pid_t> running(pid_t main_pid) {
  std::vector<pid_t> out;
  for (const ProcStat& p : job_tree(main_pid))
    if (!p.zombie()) out.push_back(p.pid);
  std::sort(out.begin(), out.end());
  return out;
}

std::string describe(const std::vector<ProcStat>& procs) {
  std::string s;
  for (const ProcStat& p : procs)
    s += std::to_string(p.pid) + " " + p.comm + " " + p.state + " ppid " + std::to_string(p.ppid) +
         "\n";
  return s;
}

// A job that records every pid of its tree in `pids`:
//   main sh -> child sh -> grandchild sleep
//           -> setsid child (new session, still a child of main)
//           -> double-forked daemon (its parent exits: reparented to the supervisor)
//           -> double-forked setsid daemon
//           -> a child that ignores SIGTERM
// and prints "ready" when all of them have written their pid.
std::string tree_script(const std::string& pids) {
  return "P=" + pids + "\n" +
         R"(echo $$ >> $P
sh -c 'echo $$ >> '$P'; sleep 1000 & echo $! >> '$P'; wait' &
setsid sh -c 'echo $$ >> '$P'; exec sleep 1000' &
sh -c 'sh -c "echo \$\$ >> '$P'; exec sleep 1000" &' &
sh -c 'setsid sh -c "echo \$\$ >> '$P'; exec sleep 1000" &' &
sh -c 'trap "" TERM; echo $$ >> '$P'; exec sleep 1000' &
while [ $(wc -l < $P) -lt 7 ]; do sleep 0.01; done
echo ready
wait
)";
}

TEST(LocalTree, TermThenKillLeavesNoSurvivor) {
  TempDir dir;
  auto backend = make_local_backend();
  JobRecord job = shell_job(tree_script(dir.file("pids")));
  LaunchSpec spec;
  spec.attach = false;
  bool ready = false;
  spec.on_line = [&](std::string_view l) { ready = ready || l == "ready"; };
  ASSERT_TRUE(backend->submit(job, spec).ok());
  auto limit = std::chrono::steady_clock::now() + 60s;
  while (!ready && std::chrono::steady_clock::now() < limit) {
    auto e = backend->wait(job, std::chrono::steady_clock::now() + 100ms, -1);
    ASSERT_TRUE(e.ok());
    ASSERT_NE(e->kind, Event::Kind::kExited);
  }
  ASSERT_TRUE(ready);
  std::vector<pid_t> pids = read_pids(dir.file("pids"));
  ASSERT_EQ(pids.size(), 7u);
  std::sort(pids.begin(), pids.end());
  const pid_t main_pid = std::stol(job.backend_id);
  EXPECT_EQ(running(main_pid), pids) << describe(job_tree(main_pid));

  ASSERT_TRUE(backend->signal(job, SIGTERM).ok());
  // SIGTERM ends all but the one that ignores it (give them time on a loaded machine).
  EXPECT_TRUE(eventually([&] { return running(main_pid).size() == 1; }, 20s))
      << describe(job_tree(main_pid));
  ASSERT_TRUE(backend->kill(job).ok());
  for (pid_t p : pids) EXPECT_TRUE(gone(p)) << "pid " << p << " survived";
  EXPECT_TRUE(job_tree(std::stol(job.backend_id)).empty());

  auto e = backend->wait(job, std::chrono::steady_clock::now(), -1);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Event::Kind::kExited);
  EXPECT_EQ(e->outcome.signal.value_or(0), SIGTERM);
}

TEST(LocalTree, KillAloneLeavesNoSurvivorAndIsSafeTwice) {
  TempDir dir;
  auto backend = make_local_backend();
  JobRecord job = shell_job(tree_script(dir.file("pids")));
  LaunchSpec spec;
  spec.attach = false;
  bool ready = false;
  spec.on_line = [&](std::string_view l) { ready = ready || l == "ready"; };
  ASSERT_TRUE(backend->submit(job, spec).ok());
  auto limit = std::chrono::steady_clock::now() + 60s;
  while (!ready && std::chrono::steady_clock::now() < limit)
    ASSERT_TRUE(backend->wait(job, std::chrono::steady_clock::now() + 100ms, -1).ok());
  ASSERT_TRUE(ready);
  std::vector<pid_t> pids = read_pids(dir.file("pids"));
  ASSERT_TRUE(backend->kill(job).ok());
  for (pid_t p : pids) EXPECT_TRUE(gone(p)) << "pid " << p << " survived";
  EXPECT_TRUE(backend->kill(job).ok());
  auto e = backend->wait(job, std::chrono::steady_clock::now(), -1);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->outcome.signal.value_or(0), SIGKILL);
}

TEST(LocalTree, KillAfterTheMainExitedTakesTheLeftovers) {
  TempDir dir;
  auto backend = make_local_backend();
  // The main process exits at once, leaving a setsid daemon behind.
  JobRecord job =
      shell_job("setsid sh -c 'echo $$ > " + dir.file("pid") +
                "; exec sleep 1000' & while [ ! -s " + dir.file("pid") + " ]; do sleep 0.01; done");
  ASSERT_TRUE(backend->submit(job, {}).ok());
  EXPECT_EQ(wait_exit(*backend, job, 30s).outcome.exit_code, 0);
  pid_t daemon = read_pids(dir.file("pid")).at(0);
  EXPECT_FALSE(gone(daemon));
  ASSERT_TRUE(backend->kill(job).ok());
  EXPECT_TRUE(gone(daemon));
}

// --- select_tree on synthetic process lists ---

ProcStat proc(pid_t pid, pid_t ppid, pid_t pgrp, pid_t session, char state = 'S') {
  return ProcStat{pid, "p" + std::to_string(pid), state, ppid, pgrp, session};
}

std::vector<pid_t> pids_of(const std::vector<ProcStat>& procs) {
  std::vector<pid_t> out;
  for (const auto& p : procs) out.push_back(p.pid);
  std::sort(out.begin(), out.end());
  return out;
}

TreeContext context(std::vector<pid_t> mains) {
  TreeContext ctx;
  ctx.self_pid = 100;
  ctx.self_session = 50;
  ctx.job_mains = std::move(mains);
  return ctx;
}

TEST(SelectTree, TakesGroupSessionDescendantsAndOrphansOfTheSupervisor) {
  std::vector<ProcStat> procs = {
      proc(100, 1, 50, 50),      // the supervisor
      proc(101, 100, 50, 50),    // a child of the supervisor in its own session: not a job's
      proc(200, 100, 200, 200),  // the job's main process
      proc(201, 200, 200, 200),  // child
      proc(202, 201, 202, 202),  // grandchild that called setsid: still a descendant
      proc(203, 100, 203, 203),  // double-forked setsid daemon, reparented to the supervisor
      proc(204, 1, 200, 200),    // reparented to init but still in the job's session
      proc(300, 1, 300, 300),    // unrelated
  };
  auto tree = select_tree(procs, TreeRoot{200, "t1", false}, context({200}));
  EXPECT_EQ(pids_of(tree), (std::vector<pid_t>{200, 201, 202, 203, 204}));
}

TEST(SelectTree, WithSeveralJobsAnOrphanGoesByItsToken) {
  std::vector<ProcStat> procs = {
      proc(200, 100, 200, 200), proc(400, 100, 400, 400),  // two jobs' main processes
      proc(203, 100, 203, 203),                            // orphan with job 200's token
      proc(403, 100, 403, 403),                            // orphan with job 400's token
      proc(500, 100, 500, 500),                            // orphan without a token
  };
  TreeContext ctx = context({200, 400});
  ctx.read_token = [](pid_t pid) -> std::optional<std::string> {
    if (pid == 203) return "t200";
    if (pid == 403) return "t400";
    return std::nullopt;
  };
  EXPECT_EQ(pids_of(select_tree(procs, TreeRoot{200, "t200", false}, ctx)),
            (std::vector<pid_t>{200, 203}));
  EXPECT_EQ(pids_of(select_tree(procs, TreeRoot{400, "t400", false}, ctx)),
            (std::vector<pid_t>{400, 403}));
}

TEST(SelectTree, LeavesHelpersAndOtherJobsMainProcessesAlone) {
  std::vector<ProcStat> procs = {
      proc(200, 100, 200, 200), proc(400, 100, 400, 400),  // another job's main process
      proc(600, 100, 600, 600),  // a helper (nvidia-smi sampler) in its own session
  };
  TreeContext ctx = context({200, 400});
  ctx.is_helper = [](pid_t pid) { return pid == 600; };
  EXPECT_EQ(pids_of(select_tree(procs, TreeRoot{200, "", false}, ctx)), (std::vector<pid_t>{200}));
}

TEST(SelectTree, WhatAGroupMemberOrAnOrphanStartedIsTheJobsToo) {
  std::vector<ProcStat> procs = {
      proc(100, 1, 50, 50),      // the supervisor
      proc(200, 100, 200, 200),  // the job's main process
      proc(204, 1, 200, 200),    // reparented to init, still in the job's session
      proc(205, 204, 205, 205),  // its child, which called setsid
      proc(203, 100, 203, 203),  // a double-forked daemon, reparented to the supervisor
      proc(206, 203, 206, 206),  // what the daemon started, in a session of its own
      proc(300, 1, 300, 300),    // unrelated
  };
  auto tree = select_tree(procs, TreeRoot{200, "t1", false}, context({200}));
  EXPECT_EQ(pids_of(tree), (std::vector<pid_t>{200, 203, 204, 205, 206}));
}

TEST(SelectTree, AReapedMainPidIsNotFollowed) {
  // Pid 200 was reaped and reused by an unrelated process of another session.
  std::vector<ProcStat> procs = {proc(200, 1, 900, 900), proc(201, 200, 900, 900),
                                 proc(205, 100, 200, 200)};
  auto tree = select_tree(procs, TreeRoot{200, "t", true}, context({200}));
  EXPECT_EQ(pids_of(tree), (std::vector<pid_t>{205}));
}

TEST(ParseProcStat, CommandNamesWithSpacesAndParentheses) {
  auto st = parse_proc_stat(
      "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 1 0 0 0 5 3 0 0 20 0 1 0 777 1000 42 "
      "18446744073709551615");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, 1234);
  EXPECT_EQ(st->comm, "a) b (c)");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->pgrp, 1234);
  EXPECT_EQ(st->session, 1234);
  EXPECT_FALSE(parse_proc_stat("garbage").has_value());
}

}  // namespace
}  // namespace nodus::backend::local
