// Bad input: a one-line error naming the value and what is allowed, exit 125, nothing stored.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

struct BadInput {
  std::vector<std::string> args;
  std::string mention;  // must appear in the error
};

class RunRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(RunRejects, WithOneLineAndExit125) {
  NodusHome home;
  auto r = home.run(GetParam().args, {{"NODUS_LOCAL_GPUS", "H100:2"}});
  EXPECT_EQ(r.code, 125) << r.err;
  EXPECT_NE(r.err.find(GetParam().mention), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  auto ps = home.run({"ps", "-a", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(ps.out).size(), 0u) << "a rejected run leaves no row";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RunRejects,
    ::testing::Values(
        BadInput{{"run", "--gpu", "X100", "--", "true"}, "H100-SXM"},
        BadInput{{"run", "--gpu", "H100:0", "--", "true"}, "H100:0"},
        BadInput{{"run", "--gpu", "H100:-1", "--", "true"}, "H100:-1"},
        BadInput{{"run", "--gpu", "H100:abc", "--", "true"}, "H100:abc"},
        BadInput{{"run", "--gpu", "H100:8", "--", "true"}, "more than this machine has"},
        BadInput{{"run", "--gpu", "L4", "--", "true"}, "no L4"},
        BadInput{{"run", "--gpu", "H100", "--max-cost", "0", "--", "true"}, "'0'"},
        BadInput{{"run", "--gpu", "H100", "--max-cost", "-5", "--", "true"}, "'-5'"},
        BadInput{{"run", "--gpu", "H100", "--max-cost", "nan", "--", "true"}, "'nan'"},
        BadInput{{"run", "--gpu", "H100", "--max-cost", "inf", "--", "true"}, "'inf'"},
        BadInput{{"run", "--gpu", "H100", "--max-cost", "lots", "--", "true"}, "'lots'"},
        BadInput{{"run", "--timeout", "0", "--", "true"}, "--timeout"},
        BadInput{{"run", "--timeout", "soon", "--", "true"}, "'soon'"},
        BadInput{{"run", "--max-cost", "5", "--", "true"}, "CPU-only"},
        BadInput{{"run", "--env", "1BAD=x", "--", "true"}, "1BAD=x"},
        BadInput{{"run"}, "no command"}, BadInput{{"run", "--backend", "k8s", "--", "true"}, "k8s"},
        BadInput{{"run", "--workdir", "/no/such/dir", "--", "true"}, "/no/such/dir"},
        BadInput{{"ps", "--format", "yaml"}, "yaml"}, BadInput{{"show", "424242"}, "424242"},
        BadInput{{"logs", "nosuchjob"}, "nosuchjob"}));

TEST(Prices, BadFileSaysFileAndLine) {
  NodusHome home;
  write_file(home.file("bad.json"),
             "{\n  \"gpus\": [\n    {\"type\": \"A\",\n     \"usd_per_gpu_hour\": oops}\n  ]\n}\n");
  auto r = home.run({"prices", "--prices", home.file("bad.json")});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find(home.file("bad.json") + ":4"), std::string::npos) << r.err;
  r = home.run({"prices", "--prices", home.file("missing.json")});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
}

TEST(Store, CorruptStoreIsAClearErrorAndIsNotOverwritten) {
  NodusHome home;
  std::string garbage(4096, 'x');
  write_file(home.file("nodus.db"), garbage);
  auto r = home.run({"run", "--", "true"});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find("nodus.db"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(home.file("nodus.db")), garbage);
}

TEST(Output, JsonIsOnlyJsonOnStdout) {
  NodusHome home;
  home.run({"run", "--", "true"});
  for (auto args : std::vector<std::vector<std::string>>{
           {"ps", "-a"}, {"prices"}, {"cost"}, {"show", "1"}, {"config"}}) {
    args.push_back("--format");
    args.push_back("json");
    auto r = home.run(args);
    EXPECT_EQ(r.code, 0) << args[0] << ": " << r.err;
    EXPECT_NO_THROW(nlohmann::json::parse(r.out)) << args[0] << ": " << r.out;
  }
}

TEST(Estimate, ReproducesTheWorkedExampleToTheCent) {
  NodusHome home;
  auto r =
      home.run({"estimate", "--gpu", "H100:8", "--hours", "24", "--util", "40", "--format", "csv"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream rows(r.out);
  std::string line;
  std::getline(rows, line);  // header: util,wall_hours,cost,idle_usd,saved
  std::vector<std::vector<double>> got;
  while (std::getline(rows, line)) {
    std::vector<double> v;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) v.push_back(std::stod(cell));
    got.push_back(v);
  }
  ASSERT_EQ(got.size(), 4u) << r.out;
  EXPECT_NEAR(got[0][2], 499.20, 0.005);
  EXPECT_NEAR(got[0][3], 299.52, 0.005);
  EXPECT_NEAR(got[1][1], 16, 1e-9);
  EXPECT_NEAR(got[1][2], 332.80, 0.005);
  EXPECT_NEAR(got[2][2], 249.60, 0.005);
  EXPECT_NEAR(got[3][2], 210.19, 0.005);
  auto t = home.run({"estimate", "--gpu", "H100:8", "--hours", "24", "--util", "40"});
  for (const char* figure :
       {"$499.20", "$299.52", "16 h", "$332.80", "12 h", "$249.60", "10.1 h", "$210.19"})
    EXPECT_NE(t.out.find(figure), std::string::npos) << figure << " in\n" << t.out;
}

TEST(Cost, SumsSpendByDayAndGpu) {
  NodusHome home;
  std::string prices = write_test_prices(home);
  std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "TEST:4"}, {"NODUS_PRICES", prices}};
  ASSERT_EQ(home.run({"run", "--gpu", kTestGpu, "--", "sleep", "0.3"}, env).code, 0);
  auto r = home.run({"cost", "--format", "json"});
  auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["by_gpu"].size(), 1u);
  EXPECT_EQ(j["by_gpu"][0]["gpu_type"], "TEST");
  double cost = j["by_gpu"][0]["cost_usd"].get<double>();
  EXPECT_GT(cost, 0.25);
  EXPECT_LT(cost, 2.0);
}

}  // namespace
}  // namespace nodus::testing

namespace nodus::testing {
namespace {

TEST(Store, TwoProcessesCreatingTheStoreAtOnceBothSucceed) {
  for (int round = 0; round < 15; ++round) {
    NodusHome home;
    pid_t a = home.start({"run", "--", "true"}, {}, home.file("a.out"));
    pid_t b = home.start({"run", "--", "true"}, {}, home.file("b.out"));
    EXPECT_EQ(wait_exit(a, std::chrono::seconds(30)), 0) << read_file(home.file("a.out.err"));
    EXPECT_EQ(wait_exit(b, std::chrono::seconds(30)), 0) << read_file(home.file("b.out.err"));
  }
}

}  // namespace
}  // namespace nodus::testing
