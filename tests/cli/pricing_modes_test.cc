// Issue 30: the price a job is billed at is the one its command line gave (--rate, --prices), in
// every mode: attached and detached runs, sweeps in the foreground and detached (whose
// supervisor plans the cells in a process of its own), and a sweep resumed by its id alone.
// The stored rate is what the enforcers' deadlines come from, so each mode compares it with the
// flag. Jobs are plain `true`/`sh`: they know nothing of nodus.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

const std::map<std::string, std::string> kGpus = {{"NODUS_LOCAL_GPUS", "H100:1"}};

// The rate every job of the store was billed at, by job id.
std::map<int, double> stored_rates(const NodusHome& home) {
  auto ps = home.run({"ps", "-a", "--format", "json"});
  EXPECT_EQ(ps.code, 0) << ps.err;
  std::map<int, double> rates;
  for (const auto& row : nlohmann::json::parse(ps.out)) {
    int id = row["id"].get<int>();
    rates[id] = show_json(home, std::to_string(id))["usd_per_gpu_hour"].get<double>();
  }
  return rates;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

double builtin_h100(const NodusHome& home) {
  auto r = home.run({"run", "--gpu", "H100", "--", "true"}, kGpus);
  EXPECT_EQ(r.code, 0) << r.err;
  return show_json(home, "1")["usd_per_gpu_hour"].get<double>();
}

TEST(PricingModes, RateFlagIsTheStoredRateInEveryMode) {
  NodusHome home;
  ASSERT_NE(builtin_h100(home), 36) << "the test needs a catalog rate other than the flag's";
  const std::vector<std::string> rate = {"--gpu", "H100", "--rate", "36"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), rate.begin(), rate.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  auto run = home.run(with({"run"}, {"--", "true"}), kGpus);  // job 2
  ASSERT_EQ(run.code, 0) << run.err;
  auto detached = home.run(with({"run", "-d"}, {"--", "true"}), kGpus);  // job 3
  ASSERT_EQ(detached.code, 0) << detached.err;
  ASSERT_EQ(home.run({"wait", first_line(detached.out)}).code, 0);
  auto sweep = home.run(with({"sweep"}, {"--budget", "0.20", "-p", "x=1", "--", "true"}),
                        kGpus);  // job 4
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  auto sweep_d = home.run(with({"sweep", "-d"}, {"--budget", "0.20", "-p", "x=1", "--", "true"}),
                          kGpus);  // job 5
  ASSERT_EQ(sweep_d.code, 0) << sweep_d.err;
  auto waited = home.run({"wait", first_line(sweep_d.out)});
  ASSERT_EQ(waited.code, 0) << waited.err;
  auto rates = stored_rates(home);
  ASSERT_EQ(rates.size(), 5u);
  EXPECT_EQ(rates[2], 36) << "run";
  EXPECT_EQ(rates[3], 36) << "run -d";
  EXPECT_EQ(rates[4], 36) << "sweep";
  EXPECT_EQ(rates[5], 36) << "sweep -d";
}

TEST(PricingModes, PricesFileIsTheStoredRateInEveryMode) {
  NodusHome home;
  const std::string prices = home.file("my-prices.json");
  write_file(prices, R"({"gpus": [
  {"type": "H100-SXM", "aliases": ["H100"], "usd_per_gpu_hour": 7.25, "source": "tests", "checked": "2026-12-02", "device_names": ["H100 80GB HBM3"]}
]}
)");
  ASSERT_NE(builtin_h100(home), 7.25);
  const std::vector<std::string> flags = {"--gpu", "H100", "--prices", prices};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), flags.begin(), flags.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  ASSERT_EQ(home.run(with({"run"}, {"--", "true"}), kGpus).code, 0);
  auto detached = home.run(with({"run", "-d"}, {"--", "true"}), kGpus);
  ASSERT_EQ(detached.code, 0) << detached.err;
  ASSERT_EQ(home.run({"wait", first_line(detached.out)}).code, 0);
  ASSERT_EQ(home.run(with({"sweep"}, {"-p", "x=1", "--", "true"}), kGpus).code, 0);
  auto sweep_d = home.run(with({"sweep", "-d"}, {"-p", "x=1", "--", "true"}), kGpus);
  ASSERT_EQ(sweep_d.code, 0) << sweep_d.err;
  ASSERT_EQ(home.run({"wait", first_line(sweep_d.out)}).code, 0);
  auto rates = stored_rates(home);
  ASSERT_EQ(rates.size(), 5u);
  EXPECT_EQ(rates[2], 7.25) << "run";
  EXPECT_EQ(rates[3], 7.25) << "run -d";
  EXPECT_EQ(rates[4], 7.25) << "sweep";
  EXPECT_EQ(rates[5], 7.25) << "sweep -d";
}

// `sweep --resume s1` alone reruns a failed cell at the rate the sweep was started with.
TEST(PricingModes, ASweepResumedByIdKeepsItsRate) {
  NodusHome home;
  const std::string mark = home.file("mark");
  auto first = home.run({"sweep", "--gpu", "H100", "--rate", "36", "-p", "x=1", "--", "sh", "-c",
                         "test -f " + mark + " && exit 0; touch " + mark + "; exit 3"},
                        kGpus);
  ASSERT_NE(first.code, 0) << first.err;
  auto resumed = home.run({"sweep", "--resume", "s1"}, kGpus);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  auto rates = stored_rates(home);
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_EQ(rates[1], 36);
  EXPECT_EQ(rates[2], 36) << "the resumed cell";
  // And resumed detached: its supervisor gets the rate from the definition through the ticket.
  const std::string mark2 = home.file("mark2");
  auto second = home.run({"sweep", "--gpu", "H100", "--rate", "40", "-p", "x=1", "--", "sh", "-c",
                          "test -f " + mark2 + " && exit 0; touch " + mark2 + "; exit 3"},
                         kGpus);
  ASSERT_NE(second.code, 0) << second.err;
  auto resumed_d = home.run({"sweep", "-d", "--resume", "s2"}, kGpus);
  ASSERT_EQ(resumed_d.code, 0) << resumed_d.err;
  ASSERT_EQ(home.run({"wait", "s2"}).code, 0);
  rates = stored_rates(home);
  ASSERT_EQ(rates.size(), 4u);
  EXPECT_EQ(rates[3], 40);
  EXPECT_EQ(rates[4], 40) << "the cell resumed detached";
}

}  // namespace
}  // namespace nodus::testing
