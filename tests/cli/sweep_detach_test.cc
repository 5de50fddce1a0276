// Sweeps left running: `sweep -d`, a terminal hang-up, `nodus stop SWEEP`, `nodus wait`,
// `nodus logs SWEEP`, `ps --sweep`. Jobs are scripts that know nothing of nodus.

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

std::string first_line(std::string s) { return s.substr(0, s.find('\n')); }

nlohmann::json jobs_of(const NodusHome& home, const std::string& sweep) {
  return nlohmann::json::parse(home.run({"ps", "--sweep", sweep, "--format", "json"}).out);
}

// Runs `sh -c script` as the leader of a new session (a terminal's shell), with nodus's env.
pid_t start_session(const NodusHome& home, const std::string& script) {
  std::vector<std::string> env_text;
  for (const auto& [k, v] : home.env()) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "sh", c = "-c", body = script;
  char* argv[] = {sh.data(), c.data(), body.data(), nullptr};
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  if (posix_spawnp(&pid, "sh", nullptr, &attr, argv, envp.data()) != 0) std::abort();
  posix_spawnattr_destroy(&attr);
  return pid;
}

TEST(SweepDetach, ReturnsTheIdAtOnceAndSurvivesItsTerminalHangingUp) {
  NodusHome home;
  std::string id_file = home.file("id");
  std::string marks = home.file("marks");
  // The session's shell starts the detached sweep, then hangs up its whole process group, as
  // closing a terminal does, and dies of it.
  std::string script = std::string("\"") + NODUS_BIN +
                       "\" sweep -d --param i=1..4 --parallel 2 -- sh -c 'sleep 1; echo {i} >> " +
                       marks + "' > " + id_file + "; kill -HUP 0; sleep 30";
  double t0 = now_seconds();
  pid_t sh = start_session(home, script);
  int code = wait_exit(sh, std::chrono::seconds(20));
  EXPECT_EQ(code, 128 + SIGHUP);
  EXPECT_LT(now_seconds() - t0, 1.5 * 4) << "sweep -d must return before its cells run";
  std::string id = first_line(read_file(id_file));
  ASSERT_EQ(id, "s1");
  auto waited = home.run({"wait", id});
  EXPECT_EQ(waited.code, 0) << waited.err;
  auto show = nlohmann::json::parse(home.run({"show", id, "--format", "json"}).out);
  EXPECT_EQ(show["sweep"]["state"], "completed");
  ASSERT_EQ(show["cells"].size(), 4u);
  for (const auto& c : show["cells"]) {
    EXPECT_EQ(c["status"], "completed") << c;
    EXPECT_TRUE(c["job_id"].is_number()) << c;
  }
  EXPECT_EQ(read_file(marks).size(), 8u) << read_file(marks);
  // Its events were kept in the sweep's log.
  auto logs = home.run({"logs", id});
  EXPECT_EQ(logs.code, 0) << logs.err;
  EXPECT_NE(logs.out.find("ended completed"), std::string::npos) << logs.out;
  // ps filters by sweep and shows each job's cell.
  auto jobs = jobs_of(home, id);
  ASSERT_EQ(jobs.size(), 4u);
  for (const auto& j : jobs) EXPECT_EQ(j["sweep_id"], "s1");
  auto table = home.run({"ps", "--sweep", id});
  EXPECT_NE(table.out.find("s1:4"), std::string::npos) << table.out;
  auto none = home.run({"ps", "--sweep", id, "--state", "failed", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(none.out).size(), 0u);
}

TEST(SweepDetach, StopEndsTheSchedulerFirstSoNoNewCellStarts) {
  NodusHome home;
  std::string starts = home.file("starts");
  // One cell at a time, each running until stopped: after `stop` no further cell may start.
  auto r = home.run({"sweep", "-d", "--param", "i=1..5", "--parallel", "1", "--grace", "1s", "--",
                     "sh", "-c", "echo {i} >> " + starts + "; exec sleep 60"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string id = first_line(r.out);
  double until = now_seconds() + 15;
  while (now_seconds() < until && read_file(starts).empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(read_file(starts), "1\n");
  auto stop = home.run({"stop", id});
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_NE(stop.out.find("stopped"), std::string::npos) << stop.out;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(read_file(starts), "1\n") << "a cell started after nodus stop";
  auto jobs = jobs_of(home, id);
  ASSERT_EQ(jobs.size(), 1u) << jobs;
  EXPECT_EQ(jobs[0]["state"], "stopped");
  // Stopped by the user, as the README says: 143, not Ctrl-C's 130 (issue 29, point 4).
  EXPECT_EQ(home.run({"wait", id}).code, 143);
  auto sweeps = nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out);
  EXPECT_EQ(sweeps[0]["state"], "stopped") << sweeps;
  // Stopping an ended sweep is not an error.
  EXPECT_EQ(home.run({"stop", id}).code, 0);
}

// While a cell runs, what its sweep has cost so far counts it, as `ps` counts the job: a row's
// bill is written when it ends, so reading the rows alone said $0.00 for a running sweep.
TEST(SweepDetach, ARunningSweepsCostCountsItsRunningCells) {
  NodusHome home;
  auto r = home.run(
      {"sweep", "-d", "--rate", "360", "--param", "i=1", "--grace", "1s", "--", "sleep", "60"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string id = first_line(r.out);
  double until = now_seconds() + 20, wall = 0;
  while (now_seconds() < until && wall < 1.0) {
    auto jobs = jobs_of(home, id);
    if (jobs.size() == 1 && jobs[0]["state"] == "running") wall = jobs[0]["wall_s"].get<double>();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(wall, 1.0);
  auto sweeps = nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out);
  EXPECT_GE(sweeps[0]["cost_usd"].get<double>(), 0.1) << sweeps;  // $0.10 a second
  auto show = nlohmann::json::parse(home.run({"show", id, "--format", "json"}).out);
  EXPECT_GE(show["sweep"]["cost_usd"].get<double>(), 0.1) << show;
  EXPECT_GE(show["cells"][0]["cost_usd"].get<double>(), 0.1) << show;
  EXPECT_EQ(home.run({"stop", id}).code, 0);
  EXPECT_EQ(home.run({"wait", id}).code, 143);
}

// A sweep whose own nodus process is killed: its running cell is stopped with it (the
// parent-death signal), and what is recorded says so: the cell's note names the sweep's death,
// the sweep is lost (not interrupted, which is Ctrl-C's), and waiting on it is 125.
TEST(SweepDetach, ASweepKilledIsLostAndItsCellsSayWhyTheyStopped) {
  NodusHome home;
  pid_t sweep = home.start(
      {"sweep", "--param", "i=1,2", "--parallel", "1", "--grace", "1s", "--", "sleep", "60"});
  double until = now_seconds() + 20;
  bool running = false;
  while (now_seconds() < until && !running) {
    auto jobs = nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out);
    running = jobs.size() == 1 && jobs[0]["state"] == "running";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(running);
  ASSERT_EQ(kill(sweep, SIGKILL), 0);
  EXPECT_EQ(wait_exit(sweep, std::chrono::seconds(5)), 128 + SIGKILL);
  nlohmann::json cell;
  until = now_seconds() + 20;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cell = nlohmann::json::parse(home.run({"show", "1", "--format", "json"}).out);
  } while (now_seconds() < until && cell["state"] == "running");
  EXPECT_EQ(cell["state"], "stopped") << cell;
  EXPECT_NE(
      cell["note"].get<std::string>().find("stopped with its sweep: the sweep's nodus process"),
      std::string::npos)
      << cell["note"];
  auto sweeps = nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out);
  EXPECT_EQ(sweeps[0]["state"], "lost") << sweeps;
  EXPECT_EQ(home.run({"wait", "s1"}).code, 125);
}

TEST(SweepDetach, WaitExitsWithTheJobsCodeOrTheSweeps) {
  NodusHome home;
  auto job = home.run({"run", "-d", "--", "sh", "-c", "sleep 0.5; exit 7"});
  ASSERT_EQ(job.code, 0) << job.err;
  EXPECT_EQ(home.run({"wait", first_line(job.out)}).code, 7);
  auto sweep = home.run({"sweep", "-d", "--param", "i=1,2", "--", "sh", "-c", "exit $(({i} - 1))"});
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  EXPECT_EQ(home.run({"wait", first_line(sweep.out)}).code, 1);  // cell 2 failed
  EXPECT_EQ(home.run({"wait", "s9"}).code, 125);
}

TEST(SweepDetach, LogsOfACellAndOfAnAttachedSweep) {
  NodusHome home;
  auto r = home.run({"sweep", "--param", "w=a,b", "--", "echo", "hello-{w}"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto cell = home.run({"logs", "s1:2"});
  EXPECT_EQ(cell.code, 0) << cell.err;
  EXPECT_EQ(cell.out, "hello-b\n");
  auto whole = home.run({"logs", "s1"});
  EXPECT_EQ(whole.code, 125);
  EXPECT_NE(whole.err.find("nodus logs s1:CELL"), std::string::npos) << whole.err;
}

}  // namespace
}  // namespace nodus::testing
