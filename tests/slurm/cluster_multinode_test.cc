// Multi-node jobs (issue 35) on the dev cluster's two nodes (dev1, dev2: two slurmd on this
// machine, scripts/slurm-dev-cluster.sh): `nodus run --nodes 2` runs one task per node with the
// rendezvous variables, bills both nodes' GPUs, and every node's enforcer holds the cap when
// nodus is gone; `nodus stop` and a failing node end every node.
//
// All nodes are this machine, so a job's processes on both nodes are found in /proc by a marker
// in their command line (a sleep of a length no other process has).

#ifdef NODUS_BIN

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;
using std::chrono::milliseconds;

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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

  pid_t start(const std::vector<std::string>& args, const std::string& as = "cli") const {
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
      unsetenv("SLURM_JWT");
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
    setpgid(pid, pid);
    return pid;
  }

  // Runs nodus to its end; its stdout in `out`, its stderr in `err`.
  int run(const std::vector<std::string>& args, std::string* out = nullptr,
          std::string* err = nullptr) const {
    pid_t pid = start(args, "cmd");
    int status = 0;
    waitpid(pid, &status, 0);
    if (out) *out = slurp(dir_.path() + "/cmd.out");
    if (err) *err = slurp(dir_.path() + "/cmd.err");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  nlohmann::json show(const std::string& id) const {
    std::string out, err;
    EXPECT_EQ(run({"show", id, "--format", "json"}, &out, &err), 0) << err;
    return nlohmann::json::parse(out, nullptr, false);
  }
  nlohmann::json ps() const {
    std::string out, err;
    EXPECT_EQ(run({"ps", "--format", "json"}, &out, &err), 0) << err;
    return nlohmann::json::parse(out, nullptr, false);
  }

  std::string out_path() const { return dir_.path() + "/cli.out"; }
  std::string err_path() const { return dir_.path() + "/cli.err"; }

 private:
  const JobDir& dir_;
  std::map<std::string, std::string> env_;
};

bool eventually(const std::function<bool()>& pred, double limit_s) {
  for (int i = 0; i < limit_s * 10; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return pred();
}

// A sleep length no other process on this machine has: "3NN.<this test's pid><n>".
std::string marker(int n) {
  return std::to_string(300 + n) + "." + std::to_string(getpid()) + std::to_string(n);
}

// How many `sleep MARK` processes this machine has (both nodes' included; not the enforcer's
// timeout and unshare, whose command lines end with the job's).
int processes_with(const std::string& mark) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = slurp(entry.path().string() + "/cmdline");
    if (cmdline == "sleep" + std::string(1, '\0') + mark + std::string(1, '\0')) ++count;
  }
  return count;
}

int64_t slurm_id_of(const Nodus& nodus, const std::string& id) {
  int64_t slurm_id = 0;
  eventually(
      [&] {
        auto job = nodus.show(id);
        auto b = job.is_object() ? job.value("backend_id", std::string()) : "";
        if (!b.empty()) slurm_id = std::stoll(b);
        return slurm_id > 0;
      },
      30);
  return slurm_id;
}

bool ended(const SlurmJob& j) {
  return j.state != "PENDING" && j.state != "RUNNING" && j.state != "CONFIGURING" &&
         j.state != "COMPLETING" && j.state != "SUSPENDED";
}

// The nodes Slurm gave job `id` (squeue's %N, "dev[1-2]"), while it runs.
std::string nodes_of_job(int64_t id) {
  std::string out;
  slurm_command("squeue -h -j " + std::to_string(id) + " -o %N", &out);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

TEST(SlurmMultiNode, EachNodeRunsOneRankWithTheSharedRendezvous) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  pid_t pid = nodus.start(
      {"run", "--nodes", "2", "--gpu", "H100:2", "--timeout", "60s", "--", "bash", "-c",
       "echo \"rank $NODE_RANK of $NNODES on $SLURMD_NODENAME world $WORLD_SIZE rank $RANK "
       "master $MASTER_ADDR:$MASTER_PORT\"; sleep 2"});
  int status = 0;
  waitpid(pid, &status, 0);
  std::string out = slurp(nodus.out_path());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << slurp(nodus.err_path());
  // One line per node, each with its own rank, the same rendezvous in both.
  auto line_of = [&](const std::string& start) {
    auto at = out.find(start);
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  std::string rank0 = line_of("rank 0 of 2 on dev"), rank1 = line_of("rank 1 of 2 on dev");
  ASSERT_FALSE(rank0.empty()) << out;
  ASSERT_FALSE(rank1.empty()) << out;
  EXPECT_NE(rank0.substr(0, 19), rank1.substr(0, 19)) << out;  // two different nodes
  EXPECT_NE(rank0.find("world 2 rank 0 master 127.0.0.1:"), std::string::npos) << out;
  EXPECT_NE(rank1.find("world 2 rank 1 master 127.0.0.1:"), std::string::npos) << out;
  EXPECT_EQ(rank0.substr(rank0.find("master")), rank1.substr(rank1.find("master"))) << out;
  // One bill for the allocation: 2 nodes x 2 GPUs x rate x wall time.
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "completed");
  EXPECT_EQ(job["gpu_count"], 4);
  EXPECT_EQ(job["nodes"], 2);
  double wall = job["ended_at"].get<double>() - job["started_at"].get<double>();
  EXPECT_GE(wall, 2.0);
  EXPECT_NEAR(job["cost_usd"].get<double>(), 4 * h100_rate() * wall / 3600, 1e-6);
  std::printf("2 nodes x 2 H100: ran %.0f s, billed %.6f USD\n%s\n%s\n", wall,
              job["cost_usd"].get<double>(), rank0.c_str(), rank1.c_str());
}

TEST(SlurmMultiNode, TheCapHoldsOnBothNodesWithNodusKilled) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  auto rest = cluster_client(cluster_settings(dir));
  // 12 s of 2 nodes x 1 H100: TERM at 11 s, KILL at 12 s; nodus is killed as soon as both
  // nodes' tasks have started, long before.
  const double rate = h100_rate(), cap_s = 12;
  const double cap = 2 * rate * cap_s / 3600;
  const std::string mark = marker(1);
  pid_t pid = nodus.start({"run", "--nodes", "2", "--gpu", "H100:1", "--max-cost", usd(cap),
                           "--grace", "1s", "--", "bash", "-c",
                           "trap '' TERM; echo started $NODE_RANK; exec sleep " + mark});
  ASSERT_TRUE(eventually(
      [&] {
        std::string out = slurp(nodus.out_path());
        return out.find("started 0") != std::string::npos &&
               out.find("started 1") != std::string::npos;
      },
      30))
      << slurp(nodus.out_path()) << slurp(nodus.err_path());
  ::kill(-pid, SIGKILL);  // nodus's whole group: nothing of nodus is left to stop the job
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(processes_with(mark), 2);  // one on each node, both running on
  int64_t id = slurm_id_of(nodus, "1");
  EXPECT_EQ(nodes_of_job(id), "dev[1-2]");
  double gone_at = 0;
  ASSERT_TRUE(eventually([&] { return processes_with(mark) == 0; }, 60))
      << "the job's processes outlived its cap by a minute";
  gone_at = wall_now();
  auto end = poll_until(*rest, id, ended, 30);
  ASSERT_TRUE(end);
  // Both nodes' processes were gone by the cap (+ the enforcer's 0.5 s and this test's polling
  // and Slurm's whole-second start: 2 s), counted from Slurm's start of the job.
  EXPECT_LE(gone_at, end->start_time + cap_s + 2.0);
  EXPECT_LE(end->end_time - end->start_time, cap_s);  // Slurm's own record within the cap
  nlohmann::json row;
  ASSERT_TRUE(eventually(
      [&] {
        auto ps = nodus.ps();
        row = ps.is_array() && !ps.empty() ? ps.at(0) : nlohmann::json();
        return row.is_object() && row["state"] != "running";
      },
      20));
  auto job = nodus.show("1");
  std::string log;
  nodus.run({"logs", "1"}, &log);
  EXPECT_EQ(row["state"], "cost-cap") << job.dump() << "\n" << log;
  EXPECT_EQ(job["gpu_count"], 2);
  EXPECT_LE(job["cost_usd"].get<double>(), cap + 1e-9);
  EXPECT_GT(job["cost_usd"].get<double>(), 0.0);
  std::printf(
      "2 nodes, --max-cost %.6f (%.0f s), nodus's group SIGKILLed: both nodes' processes gone "
      "%.1f s after Slurm's start, Slurm ran it %.0f s, billed %.6f\n",
      cap, cap_s, gone_at - end->start_time, end->end_time - end->start_time,
      job["cost_usd"].get<double>());
}

TEST(SlurmMultiNode, StopEndsEveryNode) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  const std::string mark = marker(2);
  std::string out, err;
  ASSERT_EQ(nodus.run({"run", "-d", "--nodes", "2", "--timeout", "5m", "--grace", "2s", "--",
                       "sleep", mark},
                      &out, &err),
            0)
      << err;
  ASSERT_TRUE(eventually([&] { return processes_with(mark) == 2; }, 30))
      << processes_with(mark) << " processes with " << mark;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(nodus.run({"stop", "1"}, &out, &err), 0) << err;
  ASSERT_TRUE(eventually([&] { return processes_with(mark) == 0; }, 30))
      << "a node's task outlived `nodus stop` by 30 s";
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "stopped") << job.dump();
  std::printf("nodus stop of a 2-node job: both nodes' tasks gone %.1f s after the stop began\n",
              took);
}

TEST(SlurmMultiNode, ANodeThatFailsEndsTheJobOnEveryNode) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  const std::string mark = marker(3);
  std::string out, err;
  // Node 1's task fails after 2 s; node 0's would sleep for minutes.
  int rc = nodus.run({"run", "--nodes", "2", "--timeout", "5m", "--", "bash", "-c",
                      "if [[ $NODE_RANK == 1 ]]; then sleep 2; exit 3; fi; exec sleep " + mark},
                     &out, &err);
  EXPECT_EQ(processes_with(mark), 0);
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "failed") << job.dump();
  // The failing node's own status, not srun's 143, and which node it was.
  EXPECT_EQ(rc, 3) << err;
  EXPECT_EQ(job["exit_code"], 3) << job.dump();
  std::string log;
  EXPECT_EQ(nodus.run({"logs", "1"}, &log), 0);
  EXPECT_NE(log.find("nodus: the first node to end badly was dev2 (rank 1), with status 3"),
            std::string::npos)
      << log;
  double wall = job["ended_at"].get<double>() - job["started_at"].get<double>();
  EXPECT_LT(wall, 60.0);  // not node 0's sleep of 300 s
  std::printf("2 nodes, node 1's task exits 3: nodus exit %d, state %s after %.0f s, note: %s\n",
              rc, job["state"].get<std::string>().c_str(), wall,
              job.value("note", std::string()).c_str());
}

TEST(SlurmMultiNode, ASweepsCellsRunOnTwoNodesEach) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  Nodus nodus(dir);
  std::string out, err;
  ASSERT_EQ(nodus.run({"sweep", "--nodes", "2", "--gpu", "H100:1", "-p", "x=1,2", "--parallel", "2",
                       "--timeout", "2m", "--format", "json", "--", "bash", "-c",
                       "echo \"x={x} rank $NODE_RANK of $NNODES\""},
                      &out, &err),
            0)
      << err;
  auto ps = nodus.ps();
  ASSERT_TRUE(ps.is_array());
  ASSERT_EQ(ps.size(), 2u) << ps.dump();
  for (const auto& row : ps) {
    EXPECT_EQ(row["state"], "completed") << row.dump();
    auto job = nodus.show(std::to_string(row["id"].get<int>()));
    EXPECT_EQ(job["gpu_count"], 2);  // 2 nodes x 1 H100, billed together
    std::string log = slurp(job["log_path"].get<std::string>());
    ASSERT_NE(log.find("x="), std::string::npos) << log;
    std::string x = log.substr(log.find("x="), 3);
    EXPECT_NE(log.find(x + " rank 0 of 2"), std::string::npos) << log;
    EXPECT_NE(log.find(x + " rank 1 of 2"), std::string::npos) << log;
  }
}

// Debian's python3-torch is for /usr/bin/python3: without it (or its gloo) a torch test is skipped,
// and says so.
#define REQUIRE_GLOO_TORCH()                                                                      \
  if (std::system("/usr/bin/python3 -c 'import torch.distributed.run, torch.distributed as d; "   \
                  "assert d.is_gloo_available()' >/dev/null 2>&1") != 0)                          \
  GTEST_SKIP() << "\n*** /usr/bin/python3 HAS NO TORCH WITH GLOO (python3-torch): THIS TEST DID " \
                  "NOT RUN ***\n"

// Runs `nodus run --nodes 2 --timeout 5m -- COMMAND` of tests/data/slurm/gloo_allreduce.py to its
// end: both ranks' all-reduce lines, and the job completed. Returns its output.
std::string expect_allreduce_on_two_nodes(const std::vector<std::string>& command) {
  JobDir dir;
  Nodus nodus(dir);
  std::vector<std::string> args = {"run", "--nodes", "2", "--timeout", "5m", "--"};
  args.insert(args.end(), command.begin(), command.end());
  args.push_back(std::string(NODUS_TEST_DATA) + "/slurm/gloo_allreduce.py");
  pid_t pid = nodus.start(args);
  int status = 0;
  waitpid(pid, &status, 0);
  std::string out = slurp(nodus.out_path());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << slurp(nodus.err_path());
  EXPECT_NE(out.find("rank 0/2 on dev1: all_reduce sum 3 (expected 3) ok"), std::string::npos)
      << out;
  EXPECT_NE(out.find("rank 1/2 on dev2: all_reduce sum 3 (expected 3) ok"), std::string::npos)
      << out;
  auto job = nodus.show("1");
  EXPECT_EQ(job["state"], "completed");
  EXPECT_EQ(job["workdir"], dir.path());  // nodus's own, where Slurm ran it (it said "" before)
  // Each node's lines with its rank in front (srun --label).
  std::istringstream lines(out);
  int labelled[2] = {0, 0};
  for (std::string line; std::getline(lines, line);) {
    bool ok = line.rfind("0: ", 0) == 0 || line.rfind("1: ", 0) == 0;
    EXPECT_TRUE(ok) << line << "\n" << out;
    if (!ok) break;
    ++labelled[line[0] - '0'];
  }
  EXPECT_GT(labelled[0], 0) << out;
  EXPECT_GT(labelled[1], 0) << out;
  std::printf("gloo all-reduce on 2 nodes: %s, %.0f s\n%s", job["state"].dump().c_str(),
              job["ended_at"].get<double>() - job["started_at"].get<double>(), out.c_str());
  return out;
}

// Issue 35's torch job: a CPU all-reduce over gloo, one rank per node, its rendezvous from what
// nodus set (tests/data/slurm/gloo_allreduce.py).
TEST(SlurmMultiNode, AGlooAllReduceAcrossTwoNodesCompletes) {
  REQUIRE_SLURM_CLUSTER();
  REQUIRE_GLOO_TORCH();
  expect_allreduce_on_two_nodes({"/usr/bin/python3"});
}

// torchrun with no rendezvous flags on each node: its nnodes, node rank and rendezvous from what
// nodus set (PET_*), the same gloo all-reduce as above run as torchrun's worker on each node.
// `--redirects 1 --tee 1` works around Debian 12's torch 1.13 under Python 3.11, whose torchrun
// fails at start with its default "0" (Std.from_str finds no member 0 of the IntFlag and gives
// None): the workers' stdout goes to a file and, teed, to the job's output as "[default0]:...".
TEST(SlurmMultiNode, TorchrunNeedsNoFlagsOnEveryNode) {
  REQUIRE_SLURM_CLUSTER();
  REQUIRE_GLOO_TORCH();
  expect_allreduce_on_two_nodes(
      {"/usr/bin/python3", "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1"});
}

// Issue 35's figures per rank: a script that knows nothing of nodus iterates a DataLoader on each
// node and all-reduces at every step (tests/data/slurm/gloo_loader.py); its last rank loads
// slowly. nodus's hook, in the workdir both nodes share, reports each rank; `show` gives each
// rank's figures with its node and names the rank the other waits for.
TEST(SlurmMultiNode, ShowGivesEachRanksFiguresAndNamesTheOneThatLags) {
  REQUIRE_SLURM_CLUSTER();
  REQUIRE_GLOO_TORCH();
  JobDir dir;
  Nodus nodus(dir);
  pid_t pid =
      nodus.start({"run", "--nodes", "2", "--timeout", "5m", "--warmup", "5", "--",
                   "/usr/bin/python3", std::string(NODUS_TEST_DATA) + "/slurm/gloo_loader.py"});
  int status = 0;
  waitpid(pid, &status, 0);
  std::string out = slurp(nodus.out_path());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << slurp(nodus.err_path());
  auto job = nodus.show("1");
  const auto& stats = job["stats"];
  EXPECT_EQ(stats["instrumentation"].value("on", false), true) << stats.dump();
  ASSERT_TRUE(stats.contains("per_rank")) << stats.dump();
  ASSERT_EQ(stats["per_rank"].size(), 2u) << stats.dump();
  double sum = 0;
  for (int rank : {0, 1}) {
    const auto& r = stats["per_rank"][rank];
    EXPECT_EQ(r.value("rank", -1), rank);
    EXPECT_EQ(r.value("node", std::string()), rank == 0 ? "dev1" : "dev2") << r.dump();
    EXPECT_GT(r.value("samples_per_sec", 0.0), 0) << r.dump();
    sum += r.value("samples_per_sec", 0.0);
  }
  // The slow loader: rank 1 waits for its data, rank 0 for rank 1 at the all-reduce.
  EXPECT_GT(stats["per_rank"][1].value("data_wait", 0.0),
            stats["per_rank"][0].value("data_wait", 0.0) + 0.2)
      << stats.dump();
  EXPECT_EQ(stats.value("slowest_rank", -1), 1) << stats.dump();
  EXPECT_NEAR(stats.value("instrumented_throughput", 0.0), sum, 1e-6 * sum);
  std::string text, err;
  ASSERT_EQ(nodus.run({"show", "1"}, &text, &err), 0) << err;
  for (const char* line : {"rank 0", "rank 1", "dev1: ", "dev2: ", "slowest rank", "rank 1 (dev2)"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  std::printf("%s", text.c_str());
}

// Issue 58 on two nodes: a loop without a DataLoader (tests/data/pytorch/ddp_steps.py, its ranks'
// rendezvous from what nodus set), whose rank 1 fetches each batch 20 ms late. Each node's hook
// reports its rank's optimizer steps; `show` names rank 1 on dev2 as the one the other waits for,
// with the share of each step it costs rank 0, and the diagnosis says so first.
TEST(SlurmMultiNode, ALoopOfStepsOnTwoNodesNamesTheRankThatLagsAndWhatItCosts) {
  REQUIRE_SLURM_CLUSTER();
  REQUIRE_GLOO_TORCH();
  JobDir dir;
  Nodus nodus(dir);
  pid_t pid =
      nodus.start({"run", "--nodes", "2", "--timeout", "5m", "--warmup", "10", "--",
                   "/usr/bin/python3", std::string(NODUS_TEST_DATA) + "/pytorch/ddp_steps.py",
                   "--steps", "150", "--slow-rank", "1", "--fetch-ms", "20"});
  int status = 0;
  waitpid(pid, &status, 0);
  std::string out = slurp(nodus.out_path());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << slurp(nodus.err_path());
  const auto stats = nodus.show("1")["stats"];
  SCOPED_TRACE(stats.dump());
  ASSERT_EQ(stats["per_rank"].size(), 2u);
  EXPECT_EQ(stats["per_rank"][1].value("node", std::string()), "dev2");
  EXPECT_EQ(stats.value("slowest_rank", -1), 1);
  const double step_s = stats["instrumented_step_time"].get<double>();
  EXPECT_NEAR(stats["others_wait_share"].get<double>(), 0.020 / step_s, 0.1);
  EXPECT_EQ(stats["findings"][0]["rule"], "rank-lags");
  std::string text, err;
  ASSERT_EQ(nodus.run({"show", "1"}, &text, &err), 0) << err;
  EXPECT_NE(text.find("rank 1 (dev2)'s own work per step"), std::string::npos) << text;
  EXPECT_NE(text.find("It waits on its batch fetch outside the step"), std::string::npos) << text;
}

}  // namespace
}  // namespace nodus::backend::slurm

#endif  // NODUS_BIN
