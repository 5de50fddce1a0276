// `nodus run|sweep|ps --backend slurm` end to end: the nodus binary against the real cluster.

#ifdef NODUS_BIN

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "billing/catalog.h"
#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;

struct CliResult {
  int rc = -1;
  std::string out, err;
  double seconds = 0;
};

// One nodus process with its own store (NODUS_HOME) and the cluster's socket endpoint.
class Nodus {
 public:
  explicit Nodus(const JobDir& dir) : dir_(dir) {
    env_ = {{"NODUS_HOME", dir.path() + "/home"},
            {"NODUS_SLURM_URL", cluster().socket_url},
            {"NODUS_SLURM_WORKDIR", dir.path()},
            {"NODUS_BACKEND", "slurm"},
            {"NO_COLOR", "1"}};
  }
  void set(const std::string& k, const std::string& v) { env_[k] = v; }
  // The largest file nodus may write (RLIMIT_FSIZE; SIGXFSZ beyond): a flood fails the test
  // instead of filling the disk.
  void limit_file_size(rlim_t bytes) { fsize_limit_ = bytes; }

  // Starts nodus with `args`; its stdout and stderr go to files in the test's folder: cli.out
  // and cli.err, or `<as>.out` and `<as>.err` (a run that other commands run beside).
  pid_t start(const std::vector<std::string>& args, const std::string& as = "cli") const {
    pid_t pid = fork();
    if (pid == 0) {
      if (fsize_limit_ > 0) {
        rlimit limit{fsize_limit_, fsize_limit_};
        setrlimit(RLIMIT_FSIZE, &limit);
      }
      for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
      if (!env_.count("SLURM_JWT")) unsetenv("SLURM_JWT");
      if (chdir(dir_.path().c_str()) != 0) _exit(126);
      int o = open((dir_.path() + "/" + as + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open((dir_.path() + "/" + as + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
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
    return pid;
  }

  // As run(), but a nodus still running after `limit_s` is killed and rc is -1: a hang fails
  // the test instead of stalling it.
  CliResult run_within(const std::vector<std::string>& args, double limit_s) const {
    auto t0 = std::chrono::steady_clock::now();
    pid_t pid = start(args);
    int status = 0;
    CliResult r;
    for (;;) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(limit_s)) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.out = slurp(out_path());
    r.err = slurp(err_path());
    return r;
  }

  CliResult run(const std::vector<std::string>& args) const {
    auto t0 = std::chrono::steady_clock::now();
    pid_t pid = start(args);
    int status = 0;
    waitpid(pid, &status, 0);
    CliResult r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out_path());
    r.err = slurp(err_path());
    return r;
  }

  std::string out_path() const { return dir_.path() + "/cli.out"; }
  std::string err_path() const { return dir_.path() + "/cli.err"; }

  nlohmann::json show(const std::string& id) const {
    auto r = run({"show", id, "--format", "json"});
    EXPECT_EQ(r.rc, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

 private:
  const JobDir& dir_;
  std::map<std::string, std::string> env_;
  rlim_t fsize_limit_ = 0;
};

TEST(SlurmCli, RunReturnsTheJobsExitCodeAndOutput) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r =
      nodus.run({"run", "--", "bash", "-c", "echo hello $NODUS_JOB_ID; echo oops >&2; exit 3"});
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_NE(r.out.find("hello 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oops"), std::string::npos) << r.out;  // one file holds both streams
  auto job = nodus.show("1");
  EXPECT_EQ(job["backend"], "slurm");
  EXPECT_FALSE(job["backend_id"].get<std::string>().empty());
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["exit_code"], 3);
}

TEST(SlurmCli, TimeoutStopsTheJobWithinTwoSeconds) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r = nodus.run({"run", "--timeout", "3s", "--", "sleep", "120"});
  EXPECT_EQ(r.rc, 124) << r.err;
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "timeout");
  // Slurm's times are whole seconds: 3 s of run time end up as 2 to 4.
  double wall = job["ended_at"].get<double>() - job["started_at"].get<double>();
  EXPECT_LE(wall, 3.0 + 2.0);
  EXPECT_LT(r.seconds, 3.0 + 2.0 + 3.0);  // + queueing (~1 s) and process start
}

TEST(SlurmCli, CostCapStopsTheJobAtTheCap) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  double rate = (*billing::Catalog::builtin().lookup("H100"))->usd_per_gpu_hour;
  double cap_s = 4;
  double max_cost = rate * cap_s / 3600;
  char cap[32];
  std::snprintf(cap, sizeof cap, "%.6f", max_cost);
  // Ignores SIGTERM, so only the cancel at the cap stops it.
  auto r = nodus.run({"run", "--gpu", "H100:1", "--max-cost", cap, "--grace", "1s", "--", "bash",
                      "-c", "trap '' TERM; sleep 120"});
  EXPECT_EQ(r.rc, 122) << r.err;
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "cost-cap");
  double wall = job["ended_at"].get<double>() - job["started_at"].get<double>();
  EXPECT_LE(wall, cap_s + 2.0);
  EXPECT_LE(job["cost_usd"].get<double>(), max_cost + rate * 2.0 / 3600);
}

TEST(SlurmCli, UnavailableGpuIsAOneLineErrorInSlurmsWords) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r = nodus.run({"run", "--gpu", "A100:1", "--", "true"});
  EXPECT_EQ(r.rc, 125);
  EXPECT_NE(r.err.find("Requested node configuration is not available (2014)"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(SlurmCli, RestdDownIsAClearErrorWithExit125) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  nodus.set("NODUS_SLURM_URL", "unix://" + dir.path() + "/no-restd.sock");
  auto r = nodus.run({"run", "--", "true"});
  EXPECT_EQ(r.rc, 125);
  EXPECT_NE(r.err.find(dir.path() + "/no-restd.sock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is slurmrestd running?"), std::string::npos) << r.err;
}

TEST(SlurmCli, DetachedJobIsFollowedByPs) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r = nodus.run({"run", "--detach", "--", "sleep", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  std::string state;
  for (int i = 0; i < 150 && state != "completed"; ++i) {
    auto ps = nodus.run({"ps", "--format", "json"});
    ASSERT_EQ(ps.rc, 0) << ps.err;
    for (const auto& row : nlohmann::json::parse(ps.out))
      if (std::to_string(row["id"].get<int>()) == id) state = row["state"];
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(state, "completed");
}

TEST(SlurmCli, JobOutlivesItsKilledSupervisorAndPsFinishesIt) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  pid_t supervisor = nodus.start({"run", "--", "bash", "-c", "echo started; sleep 3"});
  for (int i = 0; i < 100 && slurp(nodus.out_path()).find("started") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(slurp(nodus.out_path()).find("started"), std::string::npos);
  kill(supervisor, SIGKILL);
  waitpid(supervisor, nullptr, 0);
  std::string state;
  for (int i = 0; i < 150 && state != "completed"; ++i) {
    auto ps = nodus.run({"ps", "--format", "json"});
    ASSERT_EQ(ps.rc, 0) << ps.err;
    state = nlohmann::json::parse(ps.out).at(0)["state"];
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(state, "completed");  // the cluster ran it to its end; ps learnt so from Slurm
  auto job = nodus.show("1");
  EXPECT_GE(job["ended_at"].get<double>() - job["started_at"].get<double>(), 2.0);
}

TEST(SlurmCli, SweepRunsEveryCellOnTheCluster) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r = nodus.run({"sweep", "--param", "x=1,2,3", "--parallel", "2", "--format", "json", "--",
                      "bash", "-c", "echo x={x}; sleep 1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto ps = nlohmann::json::parse(nodus.run({"ps", "--format", "json"}).out);
  ASSERT_EQ(ps.size(), 3u);
  for (const auto& row : ps) {
    EXPECT_EQ(row["state"], "completed");
    auto job = nodus.show(std::to_string(row["id"].get<int>()));
    EXPECT_EQ(job["backend"], "slurm");
    std::string log = slurp(job["log_path"]);
    EXPECT_EQ(log.rfind("x=", 0), 0u) << log;
  }
}

// Issue 30 case 8: a 50-cell sweep of `sleep 2`, each cell capped, recorded 50 of 50 cost-cap
// and "failed, 0 done" while Slurm had 43 COMPLETED 0:0. Every cell that Slurm records
// COMPLETED is completed in nodus, and the sweep with them.
TEST(SlurmCli, FiftyShortCappedCellsAreRecordedAsSlurmRecordsThem) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  const double rate = (*billing::Catalog::builtin().lookup("H100"))->usd_per_gpu_hour;
  char cap[32];
  // 12 s of one H100 per cell: SIGTERM at about 9.5 s, far past the 2 s each cell sleeps.
  std::snprintf(cap, sizeof cap, "%.6f", rate * 12 / 3600);
  std::string values;
  for (int i = 1; i <= 50; ++i) values += (i > 1 ? "," : "") + std::to_string(i);
  auto r = nodus.run({"sweep", "--param", "x=" + values, "--parallel", "10", "--gpu", "H100:1",
                      "--max-cost", cap, "--grace", "1s", "--format", "json", "--", "sleep", "2"});
  auto ps = nlohmann::json::parse(nodus.run({"ps", "-a", "--format", "json"}).out);
  ASSERT_EQ(ps.size(), 50u) << r.err;
  std::map<std::string, int> states;
  for (const auto& row : ps) states[row["state"].get<std::string>()]++;
  EXPECT_EQ(states["completed"], 50) << nlohmann::json(states).dump() << "\n" << r.err;
  EXPECT_EQ(r.rc, 0) << r.err;
}

// Issue 30 case 8: a job Slurm holds in its queue showed "starting" for as long as the hold
// lasted. Queued, it is "waiting"; held, its note says so and what releases it.
TEST(SlurmCli, AHeldJobIsWaitingAndSaysWhatReleasesIt) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  // Every H100 of every node busy (the dev cluster has two nodes), so the next job queues and
  // can be held before it starts.
  std::string nodes;
  ASSERT_EQ(slurm_command("sinfo -h -o %D", &nodes), 0);
  while (!nodes.empty() && (nodes.back() == '\n' || nodes.back() == ' ')) nodes.pop_back();
  ASSERT_FALSE(nodes.empty());
  ASSERT_EQ(nodus.run({"run", "-d", "--nodes", nodes, "--gpu", "H100:4", "--", "sleep", "120"}).rc,
            0);
  auto state_of = [&](const std::string& id) {
    auto job = nodus.show(id);
    return job.is_object() ? job.value("state", std::string()) : std::string();
  };
  for (int i = 0; i < 300 && state_of("1") != "running"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(state_of("1"), "running");
  ASSERT_EQ(nodus.run({"run", "-d", "--gpu", "H100:1", "--", "true"}).rc, 0);
  std::string slurm_id;
  for (int i = 0; i < 200 && slurm_id.empty(); ++i) {
    slurm_id = nodus.show("2").value("backend_id", std::string());
    if (slurm_id.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(slurm_id.empty());
  ASSERT_EQ(slurm_command("scontrol hold " + slurm_id), 0);
  nlohmann::json held;
  for (int i = 0; i < 200; ++i) {
    held = nodus.show("2");
    if (held.value("note", std::string()).find("holds job") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(held["state"], "waiting") << held.dump();
  EXPECT_NE(held["note"].get<std::string>().find("scontrol release " + slurm_id), std::string::npos)
      << held.dump();
  auto ps = nodus.run({"ps", "--format", "json"});
  EXPECT_NE(ps.out.find("\"waiting\""), std::string::npos) << ps.out;
  EXPECT_EQ(ps.out.find("\"starting\""), std::string::npos) << ps.out;
  (void)slurm_command("scontrol release " + slurm_id);
  EXPECT_EQ(nodus.run({"stop", "1", "2"}).rc, 0);
}

// Waits (up to 30 s) for nodus job `id` to run on the cluster; returns its Slurm id, or "".
std::string running_slurm_id(const Nodus& nodus, const std::string& id) {
  for (int i = 0; i < 300; ++i) {
    auto shown = nodus.run({"show", id, "--format", "json"});  // unknown until it is stored
    auto job = nlohmann::json::parse(shown.out, nullptr, false);
    if (shown.rc == 0 && job.is_object() && job.value("state", std::string()) == "running" &&
        !job.value("backend_id", std::string()).empty())
      return job["backend_id"].get<std::string>();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

// Issue 30 case 8: an administrator lowers a running job's time limit (scontrol update
// timelimit=1) under nodus's 10-minute timeout; Slurm ends it at a minute. Before: "failed, exit
// 124" and no word of why. Now a timeout, whose note names Slurm's limit and the change.
TEST(SlurmCli, AnAdminLoweredTimeLimitIsATimeoutThatSaysWhose) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  pid_t pid = nodus.start({"run", "--timeout", "10m", "--", "sleep", "600"}, "attached");
  std::string slurm_id = running_slurm_id(nodus, "1");
  ASSERT_FALSE(slurm_id.empty());
  ASSERT_EQ(slurm_command("scontrol update jobid=" + slurm_id + " timelimit=1"), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 124) << status;
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "timeout") << job.dump();
  EXPECT_EQ(job["exit_code"], 124) << job.dump();
  const std::string note = job.value("note", std::string());
  EXPECT_NE(note.find("Slurm's own time limit (1 min)"), std::string::npos) << note;
  EXPECT_NE(note.find("submitted with 11 min): the limit was lowered after submit"),
            std::string::npos)
      << note;
  EXPECT_NE(dir.read("attached.err").find("Slurm's own time limit"), std::string::npos);
}

// Issue 19 case 9: the job runs as slurmrestd's user, not as this test's (root), and cannot write
// into the submitter's 0700 NODUS_HOME; its NODUS_METRICS is a file of its own in the shared
// workdir that nodus reads, so the sweep still ranks its cells by throughput.
TEST(SlurmCli, MetricsOfJobsRunningAsAnotherUserReachTheSweep) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  std::string script =
      "echo '{{\"samples_per_sec\": '$((100 * {w}))'}}' >> \"$NODUS_METRICS\"; "
      "echo '{{\"samples_per_sec\": '$((100 * {w}))'}}' >> \"$NODUS_METRICS\"; id -u";
  auto r = nodus.run({"sweep", "--param", "w=1,4", "--", "bash", "-c", script});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(nodus.run({"show", "s1", "--format", "json"}).out);
  ASSERT_EQ(j["cells"].size(), 2u) << j.dump();
  EXPECT_EQ(j["cells"][0]["throughput"], 100) << j.dump();
  EXPECT_EQ(j["cells"][1]["throughput"], 400) << j.dump();
  auto job = nodus.show("1");
  std::string log = slurp(job["log_path"]);
  EXPECT_NE(std::stoi(log), static_cast<int>(getuid())) << "the job ran as this test's user";
}

TEST(SlurmCli, TokenNeverShowsInOutputOrTheStore) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  std::string token = cluster().token(cluster().user);
  ASSERT_FALSE(token.empty());
  nodus.set("NODUS_SLURM_URL", cluster().tcp_url);
  nodus.set("NODUS_SLURM_USER", cluster().user);
  nodus.set("SLURM_JWT", token);
  auto r = nodus.run({"run", "--", "env"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("NODUS_JOB_ID=1"), std::string::npos);
  EXPECT_EQ(r.out.find(token), std::string::npos);
  EXPECT_EQ(r.err.find(token), std::string::npos);
  EXPECT_EQ(nodus.show("1").dump().find(token), std::string::npos);
  EXPECT_EQ(slurp(dir.path() + "/home/nodus.db").find(token), std::string::npos);

  nodus.set("SLURM_JWT", token + "x");  // now a bad one
  auto bad = nodus.run({"run", "--", "true"});
  EXPECT_EQ(bad.rc, 125);
  EXPECT_EQ(bad.err.find(token), std::string::npos) << bad.err;
}

// Issue 30, item 4: `sweep -d --rate 36` stored the catalog's rate, so the node's enforcer was
// armed for a deadline 13.8x too late. The stored rate is the flag's in every mode.
TEST(SlurmCli, TheRateFlagIsTheStoredRateInEveryMode) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  ASSERT_NE((*billing::Catalog::builtin().lookup("H100"))->usd_per_gpu_hour, 36);
  const std::vector<std::string> rate = {"--gpu", "H100", "--rate", "36", "--max-cost", "0.15"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), rate.begin(), rate.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  ASSERT_EQ(nodus.run(with({"run"}, {"--", "true"})).rc, 0);
  auto detached = nodus.run(with({"run", "-d"}, {"--", "true"}));
  ASSERT_EQ(detached.rc, 0) << detached.err;
  ASSERT_EQ(nodus.run({"wait", first_line(detached.out)}).rc, 0);
  ASSERT_EQ(nodus.run(with({"sweep"}, {"--budget", "0.20", "-p", "x=1", "--", "true"})).rc, 0);
  auto sweep_d = nodus.run(with({"sweep", "-d"}, {"--budget", "0.20", "-p", "x=1", "--", "true"}));
  ASSERT_EQ(sweep_d.rc, 0) << sweep_d.err;
  auto waited = nodus.run({"wait", first_line(sweep_d.out)});
  ASSERT_EQ(waited.rc, 0) << waited.err;
  const char* modes[] = {"run", "run -d", "sweep", "sweep -d"};
  for (int id = 1; id <= 4; ++id) {
    auto job = nodus.show(std::to_string(id));
    EXPECT_EQ(job["backend"], "slurm");
    EXPECT_EQ(job["usd_per_gpu_hour"], 36) << modes[id - 1];
  }
}

// Issue 30, item 7: a token that expires while the job runs. Slurm 22.05 answers it with HTTP 500
// (not 401), which nodus once took for an outage and retried with for 33 minutes, deaf to
// SIGTERM. Now nodus says so in one line and returns, and the node's enforcer ends the job at
// its deadline.
TEST(SlurmCli, AnExpiredTokenEndsNodusAtOnceAndTheNodeStopsTheJob) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  nodus.set("NODUS_SLURM_URL", cluster().tcp_url);
  nodus.set("NODUS_SLURM_USER", cluster().user);
  nodus.set("SLURM_JWT", cluster().token(cluster().user, 4));
  auto r = nodus.run_within({"run", "--timeout", "20s", "--", "sleep", "120"}, 90);
  ASSERT_NE(r.rc, -1) << "nodus kept retrying with the expired token";
  EXPECT_EQ(r.rc, 125) << r.err;
  EXPECT_LT(r.seconds, 15) << r.err;
  std::istringstream err_lines(r.err);
  std::string line;
  int rejected = 0;
  while (std::getline(err_lines, line))
    if (line.rfind("nodus: kill failed: slurm: token rejected (HTTP 500)", 0) == 0) ++rejected;
  EXPECT_EQ(rejected, 1) << r.err;
  EXPECT_NE(r.err.find("leaving the job to the node's enforcer"), std::string::npos) << r.err;
  // The store names the Slurm job; over the socket (no token) Slurm says how it ended.
  nodus.set("NODUS_SLURM_URL", cluster().socket_url);
  nodus.set("SLURM_JWT", "");
  auto job = nodus.show("1");
  int64_t id = std::stoll(job["backend_id"].get<std::string>());
  auto rest = cluster_client(cluster_settings(dir));
  auto ended = poll_until(
      *rest, id, [](const SlurmJob& j) { return phase_of(j.state) == Phase::kFinal; }, 60);
  ASSERT_TRUE(ended) << "the job outlived its deadline";
  EXPECT_LE(ended->end_time - ended->start_time, 20 + 3) << "the node's enforcer missed it";
}

// Issue 30, item 6: the output file is the job's, and it can swap it. A FIFO in its place: the
// attached run still ends at its timeout (nodus never waits in open() for a writer) and `nodus
// logs` answers at once, in one line. A symlink to /dev/zero: nodus does not follow it (it once
// wrote 91.7 GB to its stdout in 43 s).
const char* kSwapOutput =
    "out=$(readlink /proc/$$/fd/1); echo started; rm -f \"$out\"; %s \"$out\"; sleep 60";

std::string swap_output(const char* how) {
  char script[256];
  std::snprintf(script, sizeof script, kSwapOutput, how);
  return script;
}

TEST(SlurmCli, AFifoInPlaceOfTheOutputBlocksNothing) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto r =
      nodus.run_within({"run", "--timeout", "6s", "--", "bash", "-c", swap_output("mkfifo")}, 40);
  ASSERT_NE(r.rc, -1) << "nodus blocked on the FIFO the job put in place of its output";
  EXPECT_EQ(r.rc, 124) << r.err;
  EXPECT_LT(r.seconds, 6 + 10);
  EXPECT_NE(r.err.find("is a FIFO: not read"), std::string::npos) << r.err;
  auto logs = nodus.run_within({"logs", "1"}, 10);
  ASSERT_NE(logs.rc, -1) << "nodus logs blocked on the FIFO";
  EXPECT_EQ(logs.rc, 125) << logs.err;
  EXPECT_NE(logs.err.find("is a FIFO"), std::string::npos) << logs.err;
  EXPECT_EQ(std::count(logs.err.begin(), logs.err.end(), '\n'), 1) << logs.err;
}

TEST(SlurmCli, ASymlinkToDevZeroInPlaceOfTheOutputIsNotRead) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  nodus.limit_file_size(256 << 20);
  auto r = nodus.run_within(
      {"run", "--timeout", "6s", "--", "bash", "-c", swap_output("ln -s /dev/zero")}, 40);
  ASSERT_NE(r.rc, -1) << "nodus did not end";
  EXPECT_EQ(r.rc, 124) << r.err;  // 128 + SIGXFSZ: it flooded its stdout
  EXPECT_LT(r.out.size(), 4096u);
  EXPECT_NE(r.err.find("is a symbolic link: not read"), std::string::npos) << r.err;
  auto logs = nodus.run_within({"logs", "1"}, 10);
  EXPECT_EQ(logs.rc, 125) << logs.err;
  EXPECT_LT(logs.out.size(), 4096u);
}

}  // namespace
}  // namespace nodus::backend::slurm

#endif  // NODUS_BIN
