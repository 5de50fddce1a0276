// Hostile cases on the real cluster (issue 19): nodus SIGKILLed (alone, and with its process
// group) while its job runs, slurmrestd stopped in the middle of a submit or unreachable during
// a cancel. What must hold: the node's own enforcer stops the job at the plan's deadline, Slurm
// never runs a bounded job on UNLIMITED, one submission makes one Slurm job, and a cancel is
// retried until Slurm reports the end.

#ifdef NODUS_BIN

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "billing/catalog.h"
#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;
using std::chrono::milliseconds;

// nodus with its own store, started in its own process group (as a shell would start it).
class Nodus {
 public:
  explicit Nodus(const JobDir& dir) : dir_(dir) {
    env_ = {{"NODUS_HOME", dir.path() + "/home"},
            {"NODUS_SLURM_URL", cluster().socket_url},
            {"NODUS_SLURM_WORKDIR", dir.path()},
            {"NODUS_BACKEND", "slurm"},
            {"NO_COLOR", "1"}};
  }

  pid_t start(const std::vector<std::string>& args) const {
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
      unsetenv("SLURM_JWT");
      if (chdir(dir_.path().c_str()) != 0) _exit(126);
      int o = open(out_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int n = open("/dev/null", O_RDONLY);
      dup2(n, 0);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<char*> argv = {const_cast<char*>(NODUS_BIN)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(NODUS_BIN, argv.data());
      _exit(127);
    }
    setpgid(pid, pid);
    return pid;
  }

  int run(const std::vector<std::string>& args, std::string* out = nullptr) const {
    pid_t pid = start(args);
    int status = 0;
    waitpid(pid, &status, 0);
    if (out) *out = slurp(out_path());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  nlohmann::json show(const std::string& id) const {
    std::string out;
    EXPECT_EQ(run({"show", id, "--format", "json"}, &out), 0) << slurp(err_path());
    return nlohmann::json::parse(out, nullptr, false);
  }
  nlohmann::json ps() const {
    std::string out;
    EXPECT_EQ(run({"ps", "--format", "json"}, &out), 0) << slurp(err_path());
    return nlohmann::json::parse(out, nullptr, false);
  }
  std::string store_tag() const {
    std::string tag;
    std::ifstream(dir_.path() + "/home/slurm-store-tag") >> tag;
    return tag;
  }

  void set_env(const std::string& name, const std::string& value) { env_[name] = value; }

  std::string out_path() const { return dir_.path() + "/cli.out"; }
  std::string err_path() const { return dir_.path() + "/cli.err"; }

 private:
  const JobDir& dir_;
  std::map<std::string, std::string> env_;
};

// Waits until `pred` holds, checking every 100 ms, up to `limit_s`.
bool eventually(const std::function<bool()>& pred, double limit_s) {
  for (int i = 0; i < limit_s * 10; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return pred();
}

// The Slurm job id nodus recorded for job `id` (once submitted).
int64_t slurm_id_of(const Nodus& nodus, const std::string& id) {
  int64_t slurm_id = 0;
  eventually(
      [&] {
        auto job = nodus.show(id);
        auto b = job.is_object() ? job.value("backend_id", std::string()) : "";
        if (!b.empty()) slurm_id = std::stoll(b);
        return slurm_id > 0;
      },
      20);
  return slurm_id;
}

bool ended(const SlurmJob& r) { return phase_of(r.state) == Phase::kFinal; }

// Every job slurmctld knows whose name has this store's tag.
std::vector<SlurmJob> jobs_of_store(RestClient& rest, const std::string& tag) {
  std::vector<SlurmJob> mine;
  auto all = rest.jobs();
  EXPECT_TRUE(all.ok()) << all.error().message;
  if (!all) return mine;
  for (const auto& j : *all)
    if (j.name.rfind("nodus-" + tag + "-", 0) == 0) mine.push_back(j);
  return mine;
}

// Once any is running (up to 30 s): the jobs of nodus's store that Slurm runs; none after that.
// The store's tag is read at each try: nodus writes it when it first opens the store.
std::vector<SlurmJob> running_jobs_of_store(RestClient& rest, const Nodus& nodus) {
  std::vector<SlurmJob> running;
  eventually(
      [&] {
        running.clear();
        for (auto& j : jobs_of_store(rest, nodus.store_tag()))
          if (j.state == "RUNNING") running.push_back(j);
        return !running.empty();
      },
      30);
  return running;
}

// The pid file of one of the dev cluster's daemons ("restd-socket", "slurmctld").
std::string dev_pid_file(const std::string& daemon) {
  const char* dir = std::getenv("NODUS_SLURM_DEV_DIR");
  return std::string(dir && *dir ? dir : "/tmp/nodus-slurm") + "/run/" + daemon + ".pid";
}

// Stops the socket slurmrestd (SIGSTOP) for its lifetime, or until resume().
class StoppedRestd {
 public:
  StoppedRestd() {
    std::ifstream(dev_pid_file("restd-socket")) >> pid_;
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  ~StoppedRestd() { resume(); }
  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = 0;
  }
  bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = 0;
};

// Case 4 of the issue: with nodus SIGKILLed right after the start, the node's enforcer stops a
// TERM-ignoring job at the plan's KILL (timeout + grace): within 2 s of it.
void killed_nodus_case(bool whole_group) {
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  pid_t pid = nodus.start({"run", "--timeout", "3s", "--grace", "1s", "--", "bash", "-c",
                           "trap 'echo got TERM' TERM; echo started; while :; do sleep 0.2; done"});
  ASSERT_TRUE(
      eventually([&] { return slurp(nodus.out_path()).find("started") != std::string::npos; }, 30));
  int64_t id = slurm_id_of(nodus, "1");
  ASSERT_GT(id, 0);
  ::kill(whole_group ? -pid : pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  auto end = poll_until(*rest, id, ended, 30);
  ASSERT_TRUE(end) << "the job outlived nodus by 30 s";
  double deadline = end->start_time + 3 + 1;
  EXPECT_LE(end->end_time, deadline + 2.0) << "state " << end->state;
  EXPECT_GE(end->end_time, end->start_time + 3 - 1.0);  // not before the TERM
  EXPECT_NE(end->time_limit_minutes, 0);
  std::printf("case 4: nodus SIGKILLed%s: job ran %.0f s, ended %+.0f s from its deadline\n",
              whole_group ? " with its group" : "", end->end_time - end->start_time,
              end->end_time - deadline);
  std::string log = nodus.show("1").value("log_path", std::string());
  EXPECT_NE(slurp(log).find("got TERM"), std::string::npos) << log;  // TERM came first
  // ps learns the end from Slurm and bills it from Slurm's times, as a timeout.
  nlohmann::json row;
  ASSERT_TRUE(eventually(
      [&] {
        auto ps = nodus.ps();
        if (!ps.is_array() || ps.empty()) return false;
        row = ps.at(0);
        return row["state"] != "running" && row["state"] != "waiting";
      },
      20));
  EXPECT_EQ(row["state"], "timeout");
}

TEST(SlurmEnforce, NodusKilledAloneTheNodeStopsTheJobAtItsDeadline) {
  REQUIRE_SLURM_CLUSTER();
  killed_nodus_case(false);
}

TEST(SlurmEnforce, NodusKilledWithItsProcessGroupTheNodeStopsTheJobAtItsDeadline) {
  REQUIRE_SLURM_CLUSTER();
  killed_nodus_case(true);
}

TEST(SlurmEnforce, CostCapHoldsWithNodusKilled) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  double rate = h100_rate();
  double cap = rate * 6 / 3600;  // 6 s of one H100
  pid_t pid = nodus.start({"run", "--gpu", "H100:1", "--max-cost", usd(cap), "--grace", "1s", "--",
                           "bash", "-c", "trap '' TERM; echo started; sleep 300"});
  ASSERT_TRUE(
      eventually([&] { return slurp(nodus.out_path()).find("started") != std::string::npos; }, 30));
  int64_t id = slurm_id_of(nodus, "1");
  ::kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  auto end = poll_until(*rest, id, ended, 30);
  ASSERT_TRUE(end);
  EXPECT_LE(end->end_time - end->start_time, 6.0);  // Slurm's own record within the cap
  nlohmann::json row;
  ASSERT_TRUE(eventually(
      [&] {
        auto ps = nodus.ps();
        row = ps.is_array() && !ps.empty() ? ps.at(0) : nlohmann::json();
        return row.is_object() && row["state"] != "running";
      },
      20));
  EXPECT_EQ(row["state"], "cost-cap");
  auto job = nodus.show("1");
  EXPECT_LE(job["cost_usd"].get<double>(), cap + 1e-9);
  EXPECT_GT(job["cost_usd"].get<double>(), 0.0);
  std::printf("case 4: --max-cost %.6f, nodus's group SIGKILLed: ran %.0f s, billed %.6f\n", cap,
              end->end_time - end->start_time, job["cost_usd"].get<double>());
}

// Issue 30: with nodus's group SIGKILLed, a job that tries to beat the node's enforcer. The
// cap is 6 s of one H100 (TERM at 3.5 s, KILL at 4.5 s: the grace and Slurm's end lag come
// first), so the one deadline is start + 6 s; Slurm's own limit (1 minute) is far.
struct Beaten {
  SlurmJob end;            // slurmctld's record of the end
  double billed_s = 0;     // every run in accounting
  size_t runs = 0;         // runs in accounting
  double first_start = 0;  // the first run's start
  nlohmann::json row;      // nodus ps, once it saw the end
  nlohmann::json job;      // nodus show
  std::string log;
};

std::optional<Beaten> beat_the_enforcer(Nodus& nodus, const JobDir& dir,
                                        const std::vector<std::string>& extra,
                                        const std::string& command, double cap) {
  auto rest = cluster_client(cluster_settings(dir));
  std::vector<std::string> args = {"run",    "--gpu",   "H100:1", "--max-cost",
                                   usd(cap), "--grace", "1s"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "bash", "-c", command});
  pid_t pid = nodus.start(args);
  if (!eventually([&] { return slurp(nodus.out_path()).find("started") != std::string::npos; },
                  30)) {
    ADD_FAILURE() << "the job did not start: " << slurp(nodus.err_path());
    ::kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return std::nullopt;
  }
  int64_t id = slurm_id_of(nodus, "1");
  ::kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // A requeued job waits 120 s for its BeginTime: let it run again soon, as a job that requeues
  // itself would on a cluster that gives it a short BeginTime. Not at once: slurmd refuses a
  // launch in the second its credential was revoked by the requeue ("Job credential revoked").
  std::optional<std::chrono::steady_clock::time_point> queued_since;
  auto end = poll_until(
      *rest, id,
      [&](const SlurmJob& r) {
        if (r.state != "PENDING") {
          queued_since.reset();
        } else if (!queued_since) {
          queued_since = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - *queued_since > milliseconds(1500)) {
          slurm_command("scontrol update jobid=" + std::to_string(id) + " starttime=now", nullptr);
          queued_since.reset();
        }
        return ended(r);
      },
      40);
  if (!end) {
    ADD_FAILURE() << "Slurm job " << id << " outlived nodus by 40 s";
    slurm_command("scancel " + std::to_string(id));
    return std::nullopt;
  }
  Beaten b;
  b.end = *end;
  // Accounting has every run (a requeued job's earlier ones too) once the last one ended there.
  eventually(
      [&] {
        auto runs = rest->accounting(id, false);
        if (!runs || !*runs || (*runs)->empty() || (*runs)->back().end_time <= 0) return false;
        b.billed_s = 0;
        b.runs = (*runs)->size();
        b.first_start = (*runs)->front().start_time;
        for (const auto& r : **runs)
          if (r.start_time > 0) b.billed_s += r.end_time - r.start_time;
        return true;
      },
      20);
  eventually(
      [&] {
        auto ps = nodus.ps();
        b.row = ps.is_array() && !ps.empty() ? ps.at(0) : nlohmann::json();
        return b.row.is_object() && b.row["state"] != "running" && b.row["state"] != "waiting";
      },
      20);
  b.job = nodus.show("1");
  b.log = b.job.is_object() ? slurp(b.job.value("log_path", std::string())) : "";
  return b;
}

// The one deadline holds: the job ended within the grace + 2 s of start + cap (here the cap's
// KILL is already `grace` + Slurm's end lag before the cap), every run together within the cap,
// and nodus's bill within it. A run that Slurm starts again near or after the deadline (a
// requeued job, whenever the scheduler gets to it) is not run: it ends within 2 s of its start.
void expect_within_cap(const Beaten& b, double cap, double cap_s) {
  EXPECT_GT(b.first_start, 0);
  EXPECT_LE(b.end.end_time, std::max(b.first_start + cap_s, b.end.start_time) + 2.0)
      << "state " << b.end.state << ", " << b.runs << " run(s), the last from "
      << b.end.start_time - b.first_start << " s to " << b.end.end_time - b.first_start
      << " s after the first began";
  EXPECT_LE(b.billed_s, cap_s) << b.runs << " run(s)";
  ASSERT_TRUE(b.job.is_object());
  EXPECT_LE(b.job.value("cost_usd", 1e9), cap + 1e-9);
}

// (a) The job stops its enforcer: SIGSTOP to its parent (the enforcer was its parent), and a
// ptrace attach, which stops a process 1 too. Before: the job ran to Slurm's minute-rounded
// limit.
TEST(SlurmEnforce, AJobThatStopsItsEnforcerEndsAtItsDeadline) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  double cap = h100_rate() * 6 / 3600;
  auto b = beat_the_enforcer(
      nodus, dir, {}, "trap '' TERM; kill -STOP $PPID; echo started parent=$PPID; sleep 300", cap);
  ASSERT_TRUE(b);
  expect_within_cap(*b, cap, 6);
  EXPECT_NE(b->log.find("parent=1"), std::string::npos) << b->log;  // process 1 of its namespace
  EXPECT_EQ(b->row["state"], "cost-cap") << b->row.dump();
  std::printf(
      "issue 30 (a): SIGSTOP to the enforcer, nodus killed: ran %.0f s, billed $%.6f of "
      "$%.6f, %s\n",
      b->end.end_time - b->end.start_time, b->job.value("cost_usd", 0.0), cap,
      b->end.state.c_str());
}

TEST(SlurmEnforce, AJobThatPtracesItsEnforcerEndsAtItsDeadline) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  double cap = h100_rate() * 6 / 3600;
  // PTRACE_ATTACH (16) stops the tracee, whatever signals it takes.
  auto b = beat_the_enforcer(nodus, dir, {},
                             "/usr/bin/python3 -c 'import ctypes, os, signal, time\n"
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                             "r = ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)\n"
                             "print(\"started attach=%d\" % r, flush=True)\n"
                             "time.sleep(300)'",
                             cap);
  ASSERT_TRUE(b);
  EXPECT_NE(b->log.find("attach=0"), std::string::npos) << b->log;  // it did stop its parent
  expect_within_cap(*b, cap, 6);
  std::printf(
      "issue 30 (a): ptrace of the enforcer, nodus killed: ran %.0f s, billed $%.6f of "
      "$%.6f, %s\n",
      b->end.end_time - b->end.start_time, b->job.value("cost_usd", 0.0), cap,
      b->end.state.c_str());
}

// (b) The job requeues itself 2 s in: its next run must not get a fresh clock. Before: each run
// had its own deadline, and a job that requeues itself every run had no end.
TEST(SlurmEnforce, AJobThatRequeuesItselfDoesNotGetAFreshClock) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  double cap = h100_rate() * 6 / 3600;
  auto b = beat_the_enforcer(
      nodus, dir, {},
      "trap '' TERM; echo started run; sleep 2; scontrol requeue $SLURM_JOB_ID; sleep 300", cap);
  ASSERT_TRUE(b);
  expect_within_cap(*b, cap, 6);
  EXPECT_LE(b->runs, 2u);
  EXPECT_NE(b->log.find("nodus: Slurm requeued this job (restart 1)"), std::string::npos) << b->log;
  std::printf(
      "issue 30 (b): requeued itself, nodus killed: %zu run(s) for %.0f s, billed "
      "$%.6f of $%.6f, ended %s\n",
      b->runs, b->billed_s, b->job.value("cost_usd", 0.0), cap, b->end.state.c_str());
}

// (c) What the job controls: a fake timeout, date, squeue, scontrol, sdiag and unshare first in
// the PATH nodus passes on (each leaves a mark when run), SLURM_TIME_FORMAT and TZ that change
// what Slurm's tools and date print, and a BASH_ENV that redefines the enforcer's tools as shell
// functions. Before: the fake timeout ran the job without a limit.
TEST(SlurmEnforce, HostilePathAndEnvironmentDoNotReachTheEnforcer) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  std::string bin = dir.path() + "/fakebin", marks = dir.path() + "/marks";
  mkdir(bin.c_str(), 0755);
  mkdir(marks.c_str(), 01777);
  for (const char* tool : {"timeout", "date", "squeue", "scontrol", "sdiag", "unshare"}) {
    std::ofstream f(bin + "/" + tool);
    // The fake timeout runs the command without a limit; the others answer a far future.
    f << "#!/bin/bash\ntouch " << marks << "/" << tool << "\n";
    if (std::string(tool) == "timeout")
      f << "while [[ $1 == -* ]]; do [[ $1 == -[sk] ]] && shift; shift; done; shift; exec \"$@\"\n";
    else
      f << "echo 'StartTime=4102444800 Restarts=0 sdiag output at (4102444800)'; echo "
           "4102444800000\n";
    f.close();
    chmod((bin + "/" + tool).c_str(), 0755);
  }
  std::string bash_env = bin + "/bash_env";
  std::ofstream(bash_env) << "[[ $0 == *slurm_script* ]] && touch " << marks
                          << "/bash_env\n"
                             "function /usr/bin/timeout { shift 4; \"$@\"; }\n";
  chmod(bash_env.c_str(), 0644);
  nodus.set_env("PATH", bin + ":" + std::string(std::getenv("PATH")));
  double cap = h100_rate() * 6 / 3600;
  auto b = beat_the_enforcer(nodus, dir,
                             {"-e", "SLURM_TIME_FORMAT=2099-01-01T00:00:00", "-e", "TZ=UTC-14",
                              "-e", "BASH_ENV=" + bash_env},
                             "trap '' TERM; echo started; sleep 300", cap);
  ASSERT_TRUE(b);
  expect_within_cap(*b, cap, 6);
  std::string ran;
  for (const char* tool : {"timeout", "date", "squeue", "scontrol", "sdiag", "unshare", "bash_env"})
    if (access((marks + "/" + tool).c_str(), F_OK) == 0) ran += std::string(" ") + tool;
  EXPECT_EQ(ran, "") << "the enforcer ran what the job controls";
  EXPECT_EQ(b->row["state"], "cost-cap") << b->row.dump();
  std::printf(
      "issue 30 (c): fake tools in PATH, hostile env, nodus killed: ran %.0f s, billed "
      "$%.6f of $%.6f\n",
      b->end.end_time - b->end.start_time, b->job.value("cost_usd", 0.0), cap);
}

// Case 1: a sweep cell bounded only by its share of --budget has a time limit on Slurm and an
// enforcer on the node; with the sweep's whole process group killed, the spend stays within
// the budget.
TEST(SlurmEnforce, BudgetOnlyCellsAreBoundedEvenWithTheSweepKilled) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  double rate = h100_rate();
  // Cells with no cap of their own run one at a time, each capped at what is left: 6 s.
  double budget = rate * 6 / 3600;
  pid_t pid = nodus.start({"sweep", "--param", "x=1,2", "--parallel", "2", "--gpu", "H100:1",
                           "--budget", usd(budget), "--grace", "1s", "--", "bash", "-c",
                           "trap '' TERM; echo started {x}; sleep 300"});
  std::vector<SlurmJob> running = running_jobs_of_store(*rest, nodus);
  ASSERT_FALSE(running.empty());
  for (const auto& j : running) {
    EXPECT_GT(j.time_limit_minutes, 0) << j.name;
    EXPECT_LT(j.time_limit_minutes, 60) << j.name << ": bounded by its share, not UNLIMITED";
  }
  ::kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  double spent = 0;
  for (const auto& j : running) {
    auto end = poll_until(*rest, j.job_id, ended, 30);
    ASSERT_TRUE(end) << j.name << " outlived the sweep by 30 s";
    spent += billing::cost_usd(1, rate, end->end_time - end->start_time);
  }
  EXPECT_LE(spent, budget + 1e-9);
  std::printf("case 1: budget-only cells, sweep's group SIGKILLed: spent %.6f of %.6f\n", spent,
              budget);
}

// Issue 30 case 5: one cell's supervisor SIGKILLed while its job runs on under the node's
// enforcer. Before, the sweep took the dead supervisor for an ended cell, gave its share of the
// budget back and started the next cell beside the orphan ($0.22 of $0.20). Now the cell holds
// its share until Slurm says its job ended: the next cell cannot start beside it, and the
// sweep spends no more than its budget.
TEST(SlurmEnforce, ACellWhoseSupervisorDiedHoldsItsBudgetShareUntilSlurmEndsIt) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  double rate = h100_rate();
  double cap = rate * 6 / 3600;  // 6 s of one H100 per cell
  double budget = cap * 1.5;     // one cell's worst case at a time
  pid_t pid = nodus.start({"sweep", "--param", "x=1,2", "--parallel", "2", "--gpu", "H100:1",
                           "--budget", usd(budget), "--max-cost", usd(cap), "--grace", "1s", "--",
                           "bash", "-c", "echo started {x}; sleep 300"});
  std::vector<SlurmJob> first = running_jobs_of_store(*rest, nodus);
  ASSERT_EQ(first.size(), 1u);
  // The sweep's one child is the running cell's supervisor.
  std::string children;
  ASSERT_TRUE(eventually(
      [&] {
        std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
        std::getline(in, children);
        return !children.empty();
      },
      10));
  pid_t supervisor = std::stoi(children);
  ASSERT_EQ(::kill(supervisor, SIGKILL), 0);
  auto end = poll_until(*rest, first[0].job_id, ended, 30);
  ASSERT_TRUE(end) << "the orphaned cell outlived its cap by 30 s";
  int status = 0;
  ASSERT_TRUE(eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 60))
      << slurp(nodus.err_path());
  std::string err = slurp(nodus.err_path());
  EXPECT_NE(err.find("its share of the budget stays held"), std::string::npos) << err;
  double spent = 0;
  for (const auto& j : jobs_of_store(*rest, nodus.store_tag())) {
    if (j.job_id == first[0].job_id || j.start_time <= 0) continue;
    EXPECT_GE(j.start_time, end->end_time) << j.name << " started beside the orphaned cell";
    auto other = poll_until(*rest, j.job_id, ended, 30);
    if (other) spent += billing::cost_usd(1, rate, other->end_time - other->start_time);
  }
  spent += billing::cost_usd(1, rate, end->end_time - end->start_time);
  EXPECT_LE(spent, budget + 1e-9) << err;
  std::printf("issue 30 case 5: a cell's supervisor SIGKILLed: spent %.6f of %.6f\n", spent,
              budget);
}

// Issue 30 case 8: a job that ends by itself before its SIGTERM moment is completed, however
// late nodus sees the end. Before, a job whose end was seen after the TERM moment (polling lag
// under load; here slurmrestd stopped across it) was recorded cost-cap, exit 122, while Slurm
// had COMPLETED 0:0.
TEST(SlurmEnforce, AJobThatEndedBeforeItsTermIsCompletedHoweverLateItsEndIsSeen) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  // 10 s with a 2 s grace: SIGTERM at about 6.5 s (the plan leaves room for Slurm's end lag), far
  // past the 1 s the job needs however loaded the machine.
  double cap = h100_rate() * 10 / 3600;
  pid_t pid = nodus.start(
      {"run", "--gpu", "H100:1", "--max-cost", usd(cap), "--grace", "2s", "--", "sleep", "1"});
  std::vector<SlurmJob> mine;
  ASSERT_TRUE(eventually(
      [&] {
        mine = jobs_of_store(*rest, nodus.store_tag());
        return !mine.empty() && phase_of(mine[0].state) != Phase::kQueued;
      },
      30));
  {
    StoppedRestd stopped;  // nodus sees nothing of the job until past its TERM moment
    ASSERT_TRUE(stopped.ok());
    std::this_thread::sleep_for(std::chrono::seconds(9));
  }
  int status = 0;
  ASSERT_TRUE(eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 120))
      << slurp(nodus.err_path());
  auto end = poll_until(*rest, mine[0].job_id, ended, 30);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->state, "COMPLETED");
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "completed") << job.dump() << slurp(nodus.err_path());
  EXPECT_EQ(job["exit_code"], 0) << job.dump();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(nodus.err_path());
}

// Issue 30 case 8: slurmctld stops (SIGSTOP) from 1 s into a 4 s cap until 14 s. The node's
// enforcer ends the job at its deadline, but slurmctld stamps the end when it hears of it, past
// the cap. Before: the note said the job "ran 11000 ms past its cap", which it did not. Now it says
// whose end it is: Slurm's record, billed as Slurm records it.
TEST(SlurmEnforce, WithSlurmctldDownTheNoteSaysTheLateEndIsSlurmsRecord) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  double cap = h100_rate() * 4 / 3600;
  pid_t pid = nodus.start({"run", "--gpu", "H100:1", "--max-cost", usd(cap), "--grace", "1s", "--",
                           "bash", "-c", "echo started; sleep 300"});
  ASSERT_TRUE(
      eventually([&] { return slurp(nodus.out_path()).find("started") != std::string::npos; }, 30));
  pid_t ctld = 0;
  std::ifstream(dev_pid_file("slurmctld")) >> ctld;
  ASSERT_GT(ctld, 0);
  {
    // Resumed however this block is left: the next tests need slurmctld.
    std::unique_ptr<pid_t, void (*)(pid_t*)> stopped(&ctld, [](pid_t* p) { ::kill(*p, SIGCONT); });
    ASSERT_EQ(::kill(ctld, SIGSTOP), 0);
    std::this_thread::sleep_for(std::chrono::seconds(13));
  }
  int status = 0;
  ASSERT_TRUE(eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 120))
      << slurp(nodus.err_path());
  auto job = nodus.show("1");
  const std::string note = job.value("note", std::string());
  EXPECT_EQ(job["state"], "cost-cap") << job.dump();
  EXPECT_NE(note.find("Slurm records its end"), std::string::npos) << note;
  EXPECT_EQ(note.find("ms past its cap"), std::string::npos) << note;
  std::printf("issue 30 case 8: slurmctld stopped 13 s: %s\n", note.c_str());
}

// Issue 30 case 8: an administrator suspends the job (scontrol suspend) 1 s in; nodus stops it at
// its 8 s cap. slurmctld records the end of a job killed while suspended at its suspension, but
// the job held its GPU until the kill (Slurm frees a suspended job's cores, not its GRES). Before:
// billed to the suspension, about 1 s. Now to the kill, with a note.
TEST(SlurmEnforce, ASuspendedJobIsBilledUntilItEndsNotUntilItsSuspension) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  const double rate = h100_rate();
  const double cap = rate * 8 / 3600;
  pid_t pid = nodus.start({"run", "--gpu", "H100:1", "--max-cost", usd(cap), "--grace", "1s", "--",
                           "bash", "-c", "echo started; sleep 300"});
  ASSERT_TRUE(
      eventually([&] { return slurp(nodus.out_path()).find("started") != std::string::npos; }, 30));
  const int64_t id = slurm_id_of(nodus, "1");
  ASSERT_GT(id, 0);
  ASSERT_EQ(slurm_command("scontrol suspend " + std::to_string(id)), 0);
  int status = 0;
  ASSERT_TRUE(eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 60))
      << slurp(nodus.err_path());
  auto job = nodus.show("1");
  const std::string note = job.value("note", std::string());
  EXPECT_EQ(job["state"], "cost-cap") << job.dump();
  EXPECT_NE(note.find("ended while suspended"), std::string::npos) << note;
  const double cost = job.value("cost_usd", 0.0);
  // Held to the cap's kill (about 6.5 s), not to the suspension (1 to 2 s).
  EXPECT_GE(cost, rate * 4 / 3600) << job.dump();
  EXPECT_LE(cost, cap + rate * 2 / 3600) << job.dump();
  std::printf("issue 30 case 8: suspended 1 s in, stopped at the cap: billed $%.6f of $%.6f; %s\n",
              cost, cap, note.c_str());
}

// Issue 30 case 7: a job that renames itself in Slurm (`scontrol update name=...`) with its
// supervisor gone was recorded "lost, $0.00" for a 3 s run: nodus took the renamed record for
// another job's. Its output file still names it: it is billed for what it ran and completed.
TEST(SlurmEnforce, AJobThatRenamesItselfIsStillFoundAndBilled) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  pid_t pid =
      nodus.start({"run", "--gpu", "H100:1", "--timeout", "60s", "--", "bash", "-c",
                   "scontrol update jobid=$SLURM_JOB_ID name=not-nodus && echo renamed; sleep 3"});
  ASSERT_TRUE(
      eventually([&] { return slurp(nodus.out_path()).find("renamed") != std::string::npos; }, 30))
      << slurp(nodus.err_path());
  int64_t id = slurm_id_of(nodus, "1");
  ASSERT_GT(id, 0);
  ::kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  auto end = poll_until(*rest, id, ended, 30);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->name, "not-nodus");
  nlohmann::json row;
  ASSERT_TRUE(eventually(
      [&] {
        auto ps = nodus.ps();
        row = ps.is_array() && !ps.empty() ? ps.at(0) : nlohmann::json();
        return row.is_object() && row["state"] != "running";
      },
      20));
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "completed") << job.dump();
  const double ran = end->end_time - end->start_time;
  EXPECT_NEAR(job["cost_usd"].get<double>(), billing::cost_usd(1, h100_rate(), ran), 1e-9)
      << job.dump();
  EXPECT_NE(job["note"].get<std::string>().find("renamed itself"), std::string::npos) << job.dump();
}

// Case 2: slurmrestd stopped (SIGSTOP) while nodus submits: the POST times out, nodus must not
// send another before Slurm answers whether it has the job; when slurmrestd resumes, exactly one
// Slurm job exists for the one nodus job, and it ran.
TEST(SlurmEnforce, StoppedRestdDuringSubmitLeavesExactlyOneJob) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  StoppedRestd stopped;
  ASSERT_TRUE(stopped.ok()) << "no slurmrestd pid in " << dev_pid_file("restd-socket");
  pid_t pid = nodus.start({"run", "--timeout", "30s", "--", "bash", "-c", "echo ran once"});
  std::this_thread::sleep_for(std::chrono::seconds(13));  // past the 10 s HTTP timeout
  stopped.resume();
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(nodus.err_path());
  EXPECT_NE(slurp(nodus.out_path()).find("ran once"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a late POST would show up by now
  auto mine = jobs_of_store(*rest, nodus.store_tag());
  EXPECT_EQ(mine.size(), 1u) << slurp(nodus.err_path());
  std::printf("case 2: slurmrestd stopped 13 s during submit: %zu Slurm job(s)\n", mine.size());
}

// Case 3: the cancel fails (slurmrestd unreachable: its socket is gone) and is retried until
// Slurm reports the job ended. The job has no caps, so nothing but this cancel stops it.
TEST(SlurmEnforce, FailedCancelIsRetriedUntilTheJobEnds) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  auto rest = cluster_client(settings);
  JobRecord job = new_job({"sleep", "300"}, dir);
  ASSERT_TRUE(backend->submit(job, quiet()).ok());
  int64_t id = std::stoll(job.backend_id);
  ASSERT_TRUE(poll_until(
      *rest, id, [](const SlurmJob& r) { return r.state == "RUNNING"; }, 20));
  std::string sock = settings.unix_socket, aside = sock + ".aside";
  ASSERT_EQ(rename(sock.c_str(), aside.c_str()), 0);
  std::thread restore([&] {
    std::this_thread::sleep_for(std::chrono::seconds(4));
    rename(aside.c_str(), sock.c_str());
  });
  auto t0 = std::chrono::steady_clock::now();
  auto killed = backend->kill(job);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  restore.join();
  ASSERT_TRUE(killed.ok()) << killed.error().message;
  EXPECT_GE(took, 3.5);  // it waited out the outage instead of giving up
  auto records = rest->job(id);
  ASSERT_TRUE(records.ok());
  ASSERT_FALSE(records->empty());
  EXPECT_TRUE(ended(records->front())) << records->front().state;
  std::printf("case 3: cancel through a 4 s outage: confirmed after %.1f s, job %s\n", took,
              records->front().state.c_str());
}

// Output stays private to the job's user.
TEST(SlurmEnforce, JobOutputIsPrivate) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto settings = cluster_settings(dir);
  auto backend = cluster_backend(settings);
  JobRecord job = new_job({"echo", "secret"}, dir);
  ASSERT_TRUE(backend->submit(job, quiet()).ok());
  ASSERT_TRUE(wait_to_end(*backend, job, 30));
  struct stat st {};
  ASSERT_EQ(stat(job.log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace nodus::backend::slurm

#endif  // NODUS_BIN
