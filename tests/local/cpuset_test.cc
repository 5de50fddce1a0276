// CPU sets per job (backend/local/cpuset.h): the pure rules, with made-up hosts.

#include "backend/local/cpuset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace nodus::backend::local {
namespace {

std::vector<int> range(int lo, int hi) {  // [lo, hi]
  std::vector<int> v;
  for (int c = lo; c <= hi; ++c) v.push_back(c);
  return v;
}

TEST(CpuList, ParsesAndFormatsTheKernelsSyntax) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list("5,1,1"), (std::vector<int>{1, 5}));
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1 2", "0-99999999"})
    EXPECT_FALSE(parse_cpu_list(bad)) << bad;
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({7}), "7");
  EXPECT_EQ(format_cpu_list({}), "");
}

// Two sockets of 16 cores with hyperthreads (CPU c and c+32 share a core), 4 GPUs on each:
// an 8-GPU server like the H200 x8 machine.
HostTopology eight_gpu_server() {
  HostTopology h;
  h.cpus = range(0, 63);
  h.gpus = 8;
  std::vector<int> node0 = range(0, 15), node1 = range(16, 31);
  for (int c = 32; c < 48; ++c) node0.push_back(c);
  for (int c = 48; c < 64; ++c) node1.push_back(c);
  for (int g = 0; g < 8; ++g) h.gpu_local.push_back(g < 4 ? node0 : node1);
  for (int c = 0; c < 64; ++c) h.core_of[c] = c % 32;
  h.source = "test";
  return h;
}

TEST(GpuShares, DisjointWholeCoresLocalToEachGpu) {
  const HostTopology h = eight_gpu_server();
  auto shares = gpu_shares(h);
  ASSERT_EQ(shares.size(), 8u);
  std::set<int> seen;
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(shares[g].size(), 8u) << g;  // 32 CPUs of a node / 4 GPUs
    for (int c : shares[g]) {
      EXPECT_TRUE(seen.insert(c).second) << "CPU " << c << " in two shares";
      EXPECT_EQ(g < 4, c % 32 < 16) << "GPU " << g << " got CPU " << c << " of the other node";
      // Its hyperthread sibling is in the same share: whole cores.
      int sibling = c < 32 ? c + 32 : c - 32;
      EXPECT_NE(std::find(shares[g].begin(), shares[g].end(), sibling), shares[g].end());
    }
  }
}

TEST(GpuShares, UnknownTopologySplitsEvenly) {
  HostTopology h;
  h.cpus = range(0, 1);
  h.gpus = 2;  // NODUS_LOCAL_GPUS=TEST:2 on a 2-core machine
  auto shares = gpu_shares(h);
  EXPECT_EQ(shares, (std::vector<std::vector<int>>{{0}, {1}}));
  h.cpus = range(0, 9);
  h.gpus = 3;
  shares = gpu_shares(h);
  EXPECT_EQ(shares, (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}));
}

TEST(GpuShares, MoreGpusThanCpusShareRoundRobin) {
  HostTopology h;
  h.cpus = range(0, 1);
  h.gpus = 3;
  EXPECT_EQ(gpu_shares(h), (std::vector<std::vector<int>>{{0}, {1}, {0}}));
  auto plan = plan_cpus(h, {2}, std::nullopt);
  ASSERT_TRUE(plan.ok());
  EXPECT_NE(plan->note.find("GPUs share CPUs"), std::string::npos) << plan->note;
}

TEST(GpuShares, OverlappingLocalListsFallBackToAnEvenSplit) {
  HostTopology h;
  h.cpus = range(0, 7);
  h.gpus = 2;
  h.gpu_local = {range(0, 5), range(4, 7)};  // neither one node nor disjoint
  EXPECT_EQ(gpu_shares(h), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  h.gpu_local = {range(0, 3), {}};  // one unknown
  EXPECT_EQ(gpu_shares(h), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(PlanCpus, AJobGetsTheSharesOfItsGpus) {
  const HostTopology h = eight_gpu_server();
  auto plan = plan_cpus(h, {0, 1}, std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->cpus.size(), 16u);
  auto one = plan_cpus(h, {5}, 2);  // --cpus-per-gpu 2: one whole core
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->cpus.size(), 2u);
  EXPECT_EQ(one->cpus[0] + 32, one->cpus[1]);
  EXPECT_TRUE(plan_cpus(h, {}, std::nullopt)->cpus.empty());  // CPU-only: no set
}

TEST(PlanCpus, BadRequestsNameTheValueAndWhatIsAllowed) {
  const HostTopology h = eight_gpu_server();
  auto big = plan_cpus(h, {0}, 9);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().exit_code, 125);
  EXPECT_NE(big.error().message.find("--cpus-per-gpu 9"), std::string::npos);
  EXPECT_NE(big.error().message.find("allowed: 1-8"), std::string::npos) << big.error().message;
  // A GPU the topology does not show: no set (the job runs as before), and a note says why.
  auto beyond = plan_cpus(h, {8}, std::nullopt);
  ASSERT_TRUE(beyond.ok());
  EXPECT_TRUE(beyond->cpus.empty());
  EXPECT_NE(beyond->note.find("no CPU set: GPU 8"), std::string::npos) << beyond->note;
}

TEST(CpuEnvironment, TellsTheJobItsCpusAndKeepsWhatTheUserSet) {
  auto env = cpu_environment({2, 3, 4}, {"PATH=/bin", "MKL_NUM_THREADS=1"});
  EXPECT_EQ(env["NODUS_CPUS"], "2-4");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "3");
  EXPECT_EQ(env["OPENBLAS_NUM_THREADS"], "3");
  EXPECT_FALSE(env.count("MKL_NUM_THREADS"));
  EXPECT_TRUE(cpu_environment({}, {}).empty());
}

TEST(WorkersOverCpus, TheBusiestLoadersWorkersAgainstTheJobsCpus) {
  auto loaders = nlohmann::json::parse(R"([
    {"name": "Val@train.py:40", "batches": 3, "workers": 16},
    {"name": "Train@train.py:30", "batches": 900, "workers": 8}])");
  EXPECT_EQ(workers_over_cpus(loaders, "Train@train.py:30", 4), 8);
  EXPECT_FALSE(workers_over_cpus(loaders, "Train@train.py:30", 8));  // as many as CPUs: fine
  EXPECT_FALSE(workers_over_cpus(loaders, "Train@train.py:30", 0));  // no CPU set
  EXPECT_FALSE(workers_over_cpus(nlohmann::json::parse(R"([{"name": "a", "workers": null}])"), "a",
                                 2));  // a hook from before num_workers was reported
  EXPECT_FALSE(workers_over_cpus(nlohmann::json(), "", 2));
}

}  // namespace
}  // namespace nodus::backend::local
