// A job that turns on nodus's own enforcers (issue 27, case 1). It runs as the same user, so it
// can find its supervisor (its parent) and the sentinel (the supervisor's other child, named
// nodus-sentinel) and kill or stop them. The scripts below are what such a job does with pgrep
// and kill; they know nothing else of nodus. What must hold:
// - the sentinel killed: the supervisor kills the job at once, recorded as tampered (exit 123);
// - the supervisor stopped: the sentinel kills the job after kSupervisorStoppedLimit, and the
//   supervisor records it as tampered once it runs again;
// - both (stop the supervisor, then kill the sentinel): `nodus stop` kills the job itself, and
//   so does the next nodus command once the job's deadline has passed, billing all it ran;
// - a sweep cell that kills its sentinel and its supervisor at once: the sweep kills the cell;
// - a job left running after both enforcers are gone keeps its GPUs: no store on the machine
//   gets them until its processes are gone.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "cli/fixtures.h"
#include "core/proc.h"
#include "hostile/hostile_util.h"

namespace nodus::testing {
namespace {

using namespace std::chrono_literals;

// The job looks until it finds its sentinel: the sentinel is started before the job, but names
// itself only once its own exec has run, which the job's first lines may beat.
const char* const kFindSentinel =
    "for i in $(seq 1000); do s=$(pgrep -P $PPID -x nodus-sentinel) && break; sleep 0.01; done; ";

std::map<std::string, std::string> test_gpus(const NodusHome& home) {
  return {{"NODUS_LOCAL_GPUS", "TEST:4"}, {"NODUS_PRICES", write_test_prices(home)}};
}

// The job's script, in a file: the marker must be in the job's command lines only, not in
// nodus's (a stopped supervisor is alive, and its command line would name it).
std::string script_file(const NodusHome& home, const std::string& body) {
  const std::string path = home.file("job.sh");
  write_file(path, body + "\n");
  return path;
}

bool is_stopped(pid_t pid) {
  auto st = read_proc_stat(pid);
  return st && st->state == 'T';
}

// Whatever a failed case left behind: continue the supervisor, kill the job and nodus.
void clean_up(pid_t nodus, const std::string& marker) {
  kill_all(processes_with(marker));
  if (::kill(nodus, SIGCONT) == 0) wait_exit(nodus, 10s);  // not reaped yet: a case failed
}

// A job (`nodus run --gpu TEST:4 --max-cost <cap>`) that stops its supervisor and then kills
// its sentinel: nothing of nodus watches it any more. Returns the stopped supervisor (nodus), or
// -1 when the attack did not get that far.
pid_t start_unwatched_job(const NodusHome& home, const std::string& marker, const char* cap) {
  const std::string script =
      std::string(kFindSentinel) + "kill -STOP $PPID; kill -9 $s; sleep " + marker;
  pid_t nodus = home.start(
      {"run", "--gpu", kTestGpu, "--max-cost", cap, "--", "bash", script_file(home, script)},
      test_gpus(home));
  if (!wait_for_processes(marker, 1, 20s)) return -1;
  for (int i = 0; i < 100 && !is_stopped(nodus); ++i) std::this_thread::sleep_for(50ms);
  return is_stopped(nodus) ? nodus : -1;
}

class Tamper : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cgroups_available()) GTEST_SKIP() << "needs a cgroup per job";
  }
};

TEST_F(Tamper, AJobThatKillsItsSentinelIsKilledAtOnce) {
  NodusHome home;
  const std::string marker = unique_marker("81001");
  // Without a reaction it would go on to stop its supervisor and then run unwatched.
  const std::string script =
      std::string(kFindSentinel) + "kill -9 $s; sleep 5; kill -STOP $PPID; sleep " + marker;
  pid_t nodus = home.start(
      {"run", "--gpu", kTestGpu, "--max-cost", "60", "--", "bash", script_file(home, script)},
      test_gpus(home));
  const int code = wait_exit(nodus, 30s);
  EXPECT_EQ(code, 123) << read_file(home.file("started.out.err"));
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "tampered") << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("sentinel"), std::string::npos) << job.dump();
  EXPECT_TRUE(survivors_after(marker, 5s).empty());
  EXPECT_GT(job["cost_usd"].get<double>(), 0.0);
  clean_up(nodus, marker);
}

TEST_F(Tamper, AJobThatStopsItsSupervisorIsKilledByTheSentinel) {
  NodusHome home;
  const std::string marker = unique_marker("81002");
  pid_t nodus = home.start({"run", "--gpu", kTestGpu, "--max-cost", "60", "--", "bash",
                            script_file(home, "kill -STOP $PPID; sleep " + marker)},
                           test_gpus(home));
  // The marked process starts only after the stop. (Waiting for a file the script touched before
  // the stop raced it: seen before the sleep ran, no survivor, the supervisor continued at once,
  // and the job ran on under a live supervisor for the whole wait, about 1 run in 10.)
  ASSERT_TRUE(wait_for_processes(marker, 1, 20s)) << read_file(home.file("started.out.err"));
  // The sentinel alone ends it: the supervisor stays stopped until we continue it.
  auto left = survivors_after(marker, 30s);
  EXPECT_TRUE(left.empty()) << "the job ran on while its supervisor was stopped";
  EXPECT_TRUE(is_stopped(nodus));
  ::kill(nodus, SIGCONT);
  EXPECT_EQ(wait_exit(nodus, 30s), 123);
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "tampered") << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("was stopped for"), std::string::npos)
      << job.dump();
  clean_up(nodus, marker);
}

// Stops its supervisor, then kills the sentinel before it can act: nothing of nodus is left to
// watch it. `nodus stop` must still stop it.
TEST_F(Tamper, NodusStopEndsAJobWhoseSupervisorIsStoppedAndSentinelKilled) {
  NodusHome home;
  const std::string marker = unique_marker("81003");
  pid_t nodus = start_unwatched_job(home, marker, "60");
  ASSERT_GT(nodus, 0) << "the job never stopped its supervisor";
  auto stop = home.run({"stop", "1"});
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_TRUE(survivors_after(marker, 5s).empty()) << "nodus stop left the job running";
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "stopped") << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("nodus stop killed it"), std::string::npos)
      << job.dump();
  EXPECT_GT(job["cost_usd"].get<double>(), 0.0);
  clean_up(nodus, marker);
}

// The same attack on a job with a small cap: once the cap's moment (plus grace) has passed, any
// nodus command ends it, and the bill is for all it ran, past the cap.
TEST_F(Tamper, TheNextNodusCommandEndsItPastItsDeadlineAndBillsAllItRan) {
  NodusHome home;
  const std::string marker = unique_marker("81004");
  const std::string script =
      std::string(kFindSentinel) + "kill -STOP $PPID; kill -9 $s; sleep " + marker;
  // $1 a second: the cap buys 3 s, SIGTERM due at 2 s, SIGKILL at the cap: the deadline.
  pid_t nodus = home.start({"run", "--gpu", kTestGpu, "--max-cost", "3", "--grace", "1s", "--",
                            "bash", script_file(home, script)},
                           test_gpus(home));
  ASSERT_TRUE(wait_for_processes(marker, 1, 20s));
  // No nodus command runs until it is past its cap (its bill must then say so).
  std::this_thread::sleep_for(3500ms);
  bool gone = false;
  for (int i = 0; i < 120 && !gone; ++i) {
    std::this_thread::sleep_for(250ms);
    ASSERT_EQ(home.run({"ps"}).code, 0);
    gone = processes_with(marker).empty();
  }
  EXPECT_TRUE(gone) << "no nodus command ended the job past its deadline";
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "tampered") << job.dump();
  EXPECT_GT(job["cost_usd"].get<double>(), 3.0) << "billed less than it ran: " << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("past its cap"), std::string::npos) << job.dump();
  clean_up(nodus, marker);
}

// Stops its supervisor and kills the sentinel; then the stopped supervisor is killed too (an
// OOM kill, a user's kill -9): the kernel drops its GPU locks while the job still runs on them.
// Another store must not get those GPUs until the job's processes are gone.
TEST_F(Tamper, AJobThatOutlivesItsEnforcersKeepsItsGpusFromEveryStore) {
  NodusHome home, other;
  const std::string marker = unique_marker("81006");
  pid_t nodus = start_unwatched_job(home, marker, "600");
  ASSERT_GT(nodus, 0) << "the job never stopped its supervisor";
  ASSERT_EQ(::kill(nodus, SIGKILL), 0);
  (void)wait_exit(nodus, 10s);
  ASSERT_FALSE(processes_with(marker).empty()) << "nothing left to test: the job died with nodus";

  auto refused = other.run({"run", "--gpu", kTestGpu, "--no-wait", "--", "true"}, test_gpus(other));
  EXPECT_EQ(refused.code, 125) << "another store was given GPUs the job still runs on: "
                               << refused.err;
  EXPECT_NE(refused.err.find("GPU 0 is held by job 1 of the store " + home.file("nodus.db") +
                             ": its nodus (pid " + std::to_string(nodus) + ") is gone"),
            std::string::npos)
      << refused.err;
  auto gpus = other.run({"gpus", "--format", "json"}, test_gpus(other));
  ASSERT_EQ(gpus.code, 0) << gpus.err;
  auto rows = nlohmann::json::parse(gpus.out, nullptr, false);
  ASSERT_TRUE(rows.is_array() && !rows.empty()) << gpus.out;
  EXPECT_EQ(rows[0]["other_store"]["orphaned"], true) << gpus.out;

  // Any command of the job's own store ends it (its supervisor is gone); then the GPUs are free.
  EXPECT_EQ(home.run({"ps"}, test_gpus(home)).code, 0);
  EXPECT_TRUE(survivors_after(marker, 5s).empty()) << "nodus ps left the job running";
  auto granted = other.run({"run", "--gpu", kTestGpu, "--no-wait", "--", "true"}, test_gpus(other));
  EXPECT_EQ(granted.code, 0) << granted.err;
  clean_up(nodus, marker);
}

TEST_F(Tamper, ASweepCellThatKillsItsSentinelAndSupervisorIsKilledByTheSweep) {
  NodusHome home;
  const std::string marker = unique_marker("81005");
  // The sleep is forked first: the job's main process dies with its parent (PR_SET_PDEATHSIG),
  // a child of it does not.
  const std::string script = "sleep " + marker + " & " + kFindSentinel + "kill -9 $s $PPID; wait";
  auto r = run_command(home,
                       {"timeout", "60", NODUS_BIN, "sweep", "--gpu", kTestGpu, "--max-cost", "60",
                        "--param", "x=1", "--", "bash", script_file(home, script), "{x}"},
                       test_gpus(home));
  EXPECT_NE(r.code, 124) << "the sweep waited on its cell: " << r.err;
  auto left = survivors_after(marker, 5s);
  EXPECT_TRUE(left.empty()) << "the cell's processes outlived its sweep";
  kill_all(left);
  auto job = show_json(home, "1");
  EXPECT_NE(job["state"], "running") << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("killed"), std::string::npos) << job.dump();
}

// Case 1's job: it ignores SIGTERM and stops its supervisor 0.3 s in, before its 1 s cap ($1 a
// second; SIGKILL at the cap). Returns nodus (the supervisor it stops) once the job's marked
// process runs, -1 when it never did.
pid_t start_job_that_stops_nodus_before_its_cap(const NodusHome& home, const std::string& marker) {
  pid_t nodus = home.start(
      {"run", "--gpu", kTestGpu, "--max-cost", "1", "--grace", "200ms", "--", "sh",
       script_file(home, "trap '' TERM; sleep 0.3; kill -STOP $PPID; exec sleep " + marker)},
      test_gpus(home));
  return wait_for_processes(marker, 1, 20s) ? nodus : -1;
}

// Issue 62, case 1: a job that ignores SIGTERM and stops its supervisor just before its cap.
// The sentinel kills it at the cap; nothing of nodus runs to record that. The next command must
// end the record there, billed to the sentinel's kill, not show a dead job running with a growing
// bill (before: `running` until the supervisor was continued, then billed to that moment).
TEST_F(Tamper, AJobKilledAtItsCapWhileItsSupervisorIsStoppedIsBilledToTheKill) {
  NodusHome home;
  const std::string marker = unique_marker("81011");
  pid_t nodus = start_job_that_stops_nodus_before_its_cap(home, marker);
  ASSERT_GT(nodus, 0) << read_file(home.file("started.out.err"));
  EXPECT_TRUE(survivors_after(marker, 20s).empty()) << "the sentinel left the job running";
  ASSERT_TRUE(is_stopped(nodus));
  // Long after the kill: a bill to "now" would be 3 s and more.
  std::this_thread::sleep_for(2s);
  auto ps = home.run({"ps", "-a", "--format", "json"}, test_gpus(home));
  ASSERT_EQ(ps.code, 0) << ps.err;
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "tampered") << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("its sentinel killed the job at its deadline"),
            std::string::npos)
      << job.dump();
  EXPECT_GE(job["cost_usd"].get<double>(), 0.95) << job.dump();  // SIGKILL 25 ms before the cap
  // The kill is due 10 ms after the cap; a loaded machine may take a while to carry it out.
  EXPECT_LT(job["cost_usd"].get<double>(), 2.0) << job.dump();
  // The stopped supervisor and its sentinel are gone, and the GPU is free again.
  EXPECT_NE(wait_exit(nodus, 10s), 0);
  auto next = home.run({"run", "--gpu", kTestGpu, "--no-wait", "--", "true"}, test_gpus(home));
  EXPECT_EQ(next.code, 0) << next.err;
  clean_up(nodus, marker);
}

// The same job, its supervisor continued before any other nodus command: it records the end
// itself, billed to the sentinel's kill, not to when it ran again.
TEST_F(Tamper, AStoppedSupervisorContinuedAfterTheSentinelsKillBillsToTheKill) {
  NodusHome home;
  const std::string marker = unique_marker("81012");
  pid_t nodus = start_job_that_stops_nodus_before_its_cap(home, marker);
  ASSERT_GT(nodus, 0) << read_file(home.file("started.out.err"));
  EXPECT_TRUE(survivors_after(marker, 20s).empty()) << "the sentinel left the job running";
  std::this_thread::sleep_for(2s);
  ASSERT_EQ(::kill(nodus, SIGCONT), 0);
  wait_exit(nodus, 30s);
  auto job = show_json(home, "1");
  EXPECT_NE(job["state"], "running") << job.dump();
  EXPECT_GE(job["cost_usd"].get<double>(), 0.95) << job.dump();  // SIGKILL 25 ms before the cap
  EXPECT_LT(job["cost_usd"].get<double>(), 2.0) << job.dump();
  clean_up(nodus, marker);
}

// Issue 62, case 7: a job that stops its sentinel and then its supervisor. Once past its deadline
// the next nodus command kills it, and kills the stopped sentinel too (it was left behind).
TEST_F(Tamper, AJobThatStopsBothEnforcersLeavesNoStoppedSentinelBehind) {
  NodusHome home;
  const std::string marker = unique_marker("81013");
  const std::string script = std::string(kFindSentinel) + "echo $s > " + home.file("sentinel") +
                             "; kill -STOP $s; kill -STOP $PPID; sleep " + marker;
  pid_t nodus = home.start({"run", "--gpu", kTestGpu, "--max-cost", "2", "--grace", "500ms", "--",
                            "bash", script_file(home, script)},
                           test_gpus(home));
  ASSERT_TRUE(wait_for_processes(marker, 1, 20s));
  const pid_t sentinel = std::atoi(read_file(home.file("sentinel")).c_str());
  ASSERT_GT(sentinel, 0);
  EXPECT_TRUE(is_stopped(sentinel));
  std::this_thread::sleep_for(2500ms);  // past the cap's 2 s
  ASSERT_EQ(home.run({"ps"}, test_gpus(home)).code, 0);
  EXPECT_TRUE(survivors_after(marker, 5s).empty()) << "nodus ps left the job running";
  bool sentinel_gone = false;
  for (int i = 0; i < 100 && !sentinel_gone; ++i) {
    auto st = read_proc_stat(sentinel);
    sentinel_gone = !st || st->zombie();
    if (!sentinel_gone) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(sentinel_gone) << "the stopped sentinel " << sentinel << " was left behind";
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "tampered") << job.dump();
  ::kill(sentinel, SIGKILL);
  clean_up(nodus, marker);
}

// Issue 62, case 2: a sweep cell whose job stops its supervisor. The sweep used to wait on that
// supervisor for ever (10 minutes, SIGTERM ignored, $6.08 recorded of a $0.10 budget). Now the
// sentinel kills the job, the sweep ends the cell billed to that kill, and the sweep ends.
TEST_F(Tamper, ASweepWhoseCellStopsItsSupervisorEndsOnTimeWithinItsBudget) {
  NodusHome home;
  const std::string marker = unique_marker("81014");
  auto r = run_command(home,
                       {"timeout", "60", NODUS_BIN, "sweep", "--gpu", kTestGpu, "--budget", "10",
                        "--max-cost", "2", "--grace", "200ms", "--param", "k=1", "--", "sh",
                        script_file(home, "kill -STOP $PPID; exec sleep " + marker + "$1"), "{k}"},
                       test_gpus(home));
  EXPECT_NE(r.code, 124) << "the sweep waited on the stopped supervisor: " << r.err;
  EXPECT_TRUE(survivors_after(marker, 5s).empty());
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "tampered") << job.dump();
  // Killed by the sentinel at the cap (2 s) or for the stopped supervisor (2 s): about $2.
  EXPECT_LT(job["cost_usd"].get<double>(), 3.0) << job.dump();
  EXPECT_GT(job["cost_usd"].get<double>(), 1.5) << job.dump();
  kill_all(processes_with(marker));
}

// The same cell's job kills its sentinel too: nothing ends it before its deadline but the sweep.
// SIGTERM to the sweep (what `nodus stop s1` sends) ends it at once, and the sweep ends.
TEST_F(Tamper, ASweepStoppedWhileACellsSupervisorIsStoppedEndsTheCellAndItself) {
  NodusHome home;
  const std::string marker = unique_marker("81015");
  const std::string script =
      std::string(kFindSentinel) + "kill -STOP $PPID; kill -9 $s; exec sleep " + marker + "$1";
  pid_t sweep = home.start({"sweep", "--gpu", kTestGpu, "--max-cost", "600", "--param", "k=1", "--",
                            "bash", script_file(home, script), "{k}"},
                           test_gpus(home));
  ASSERT_TRUE(wait_for_processes(marker, 1, 20s)) << read_file(home.file("started.out.err"));
  std::this_thread::sleep_for(500ms);  // the sentinel is killed just before the sleep starts
  ASSERT_EQ(::kill(sweep, SIGTERM), 0);
  const int code = wait_exit(sweep, 20s);
  EXPECT_NE(code, -1) << "the sweep did not end after SIGTERM";
  EXPECT_TRUE(survivors_after(marker, 5s).empty()) << "the stopped cell's job ran on";
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "stopped") << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("stopped with its sweep"), std::string::npos)
      << job.dump();
  kill_all(processes_with(marker));
  if (code == -1) ::kill(sweep, SIGKILL);
}

// Issue 62, case 4: the job moves its supervisor and its sentinel into a cgroup of its own and
// freezes it (cgroup.freeze). Neither is stopped (state T), yet neither runs. Returns the frozen
// cgroup's folder ("" when the job could not do it: no cgroup v2 it may write).
std::string freeze_attack(const NodusHome& home, const std::string& marker, const char* cap,
                          pid_t& nodus) {
  const std::string cg = "/sys/fs/cgroup/nodus-freeze-" + marker;
  const std::string script =
      std::string(kFindSentinel) +
      "root=$(grep -m1 ' - cgroup2 ' /proc/self/mountinfo | cut -d' ' -f5); "
      "f=$root/nodus-freeze-" +
      marker + "; mkdir $f && echo $f > " + home.file("frozen") +
      " && echo $PPID > $f/cgroup.procs && echo $s > $f/cgroup.procs && echo 1 > "
      "$f/cgroup.freeze; exec sleep " +
      marker;
  nodus = home.start({"run", "--gpu", kTestGpu, "--max-cost", cap, "--grace", "200ms", "--", "bash",
                      script_file(home, script)},
                     test_gpus(home));
  if (!wait_for_processes(marker, 1, 20s)) return "";
  std::this_thread::sleep_for(300ms);
  return read_file(home.file("frozen")).substr(0, read_file(home.file("frozen")).find('\n'));
}

void thaw_and_remove(const std::string& folder) {
  if (folder.empty()) return;
  write_file(folder + "/cgroup.freeze", "0\n");
  (void)::rmdir(folder.c_str());
}

TEST_F(Tamper, NodusStopEndsAtOnceAJobThatFrozeItsEnforcers) {
  NodusHome home;
  const std::string marker = unique_marker("81016");
  pid_t nodus = -1;
  const std::string frozen = freeze_attack(home, marker, "600", nodus);
  if (frozen.empty() || !process_stopped(nodus)) {
    clean_up(nodus, marker);
    thaw_and_remove(frozen);
    GTEST_SKIP() << "the job could not freeze nodus here (no writable cgroup v2 folder)";
  }
  const double t0 = now_seconds();
  auto stop = home.run({"stop", "1"});
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_LT(now_seconds() - t0, 5.0) << "nodus stop waited on a frozen supervisor";
  EXPECT_TRUE(survivors_after(marker, 5s).empty()) << "nodus stop left the job running";
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "stopped") << job.dump();
  clean_up(nodus, marker);
  thaw_and_remove(frozen);
}

TEST_F(Tamper, TheNextCommandEndsAJobThatFrozeItsEnforcersPastItsDeadline) {
  NodusHome home;
  const std::string marker = unique_marker("81017");
  pid_t nodus = -1;
  const std::string frozen = freeze_attack(home, marker, "2", nodus);
  if (frozen.empty() || !process_stopped(nodus)) {
    clean_up(nodus, marker);
    thaw_and_remove(frozen);
    GTEST_SKIP() << "the job could not freeze nodus here (no writable cgroup v2 folder)";
  }
  std::this_thread::sleep_for(2500ms);  // past the cap's 2 s
  ASSERT_EQ(home.run({"ps"}, test_gpus(home)).code, 0);
  EXPECT_TRUE(survivors_after(marker, 5s).empty()) << "nodus ps left the job running";
  auto job = show_json(home, "1");
  EXPECT_EQ(job["state"], "tampered") << job.dump();
  EXPECT_NE(wait_exit(nodus, 10s), -1) << "the frozen supervisor was left behind";
  clean_up(nodus, marker);
  thaw_and_remove(frozen);
}

}  // namespace
}  // namespace nodus::testing
