// Issue 29: what nodus says is what happens. Each case failed before its fix.

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

// Point 1: `sweep` warns like `run` when a cell's cap buys less than the grace period (before,
// both cells were killed at ~20 ms with no warning).
TEST(Truth, SweepWarnsWhenACellsCapBuysLessThanTheGrace) {
  NodusHome home;
  const std::map<std::string, std::string> gpus = {{"NODUS_LOCAL_GPUS", "L4:2"}};
  auto r = home.run(
      {"sweep", "--gpu", "L4", "--max-cost", "0.0001", "-p", "a=1,2", "--dry-run", "--", "true"},
      gpus);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("each cell: --max-cost buys"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGTERM goes out at start"), std::string::npos) << r.err;
  auto budget = home.run(
      {"sweep", "--gpu", "L4", "--budget", "0.0002", "-p", "a=1,2", "--dry-run", "--", "true"},
      gpus);
  EXPECT_NE(budget.err.find("each cell: the budget share buys"), std::string::npos) << budget.err;
  auto roomy = home.run(
      {"sweep", "--gpu", "L4", "--max-cost", "1", "-p", "a=1,2", "--dry-run", "--", "true"}, gpus);
  EXPECT_EQ(roomy.err.find("each cell:"), std::string::npos) << roomy.err;
}

// Point 4: a sweep whose cells were all stopped by --max-cost ended "cost-cap" and exits with the
// cap's 122 (before: "failed", exit 1, as if a cell had failed).
TEST(Truth, ASweepWhoseCellsAllHitTheirCapEndsCostCap) {
  NodusHome home;
  auto r = home.run({"sweep", "--gpu", kTestGpu, "--prices", write_test_prices(home), "--max-cost",
                     "0.3", "--grace", "100ms", "-p", "a=1,2", "--", "sleep", "30"},
                    {{"NODUS_LOCAL_GPUS", "TEST:8"}});
  EXPECT_EQ(r.code, 122) << r.err;
  auto sweeps = nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out);
  EXPECT_EQ(sweeps[0]["state"], "cost-cap") << sweeps;
  EXPECT_EQ(home.run({"wait", "s1"}).code, 122);
}

// Point 6: `run --dry-run` says what would run and what it could cost, and runs nothing.
TEST(Truth, RunDryRunShowsTheRateTheStopsAndTheWorstCaseAndRunsNothing) {
  NodusHome home;
  const std::string marker = home.file("ran");
  auto r = home.run({"run", "--dry-run", "--gpu", "H100:2", "--prices", write_test_prices(home),
                     "--max-cost", "5", "--timeout", "2h", "--", "touch", marker},
                    {{"NODUS_LOCAL_GPUS", "H100:2"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("would run: touch " + marker), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 x H100-SXM at $2.60/GPU-hour ($5.20/hour)"), std::string::npos) << r.out;
  // $5 at $5.20 an hour: 3461.5 s, the SIGKILL at the cap and the SIGTERM a grace (10 s) before.
  EXPECT_NE(r.out.find("stop: --max-cost, SIGTERM at 3451.5 s, SIGKILL at 3461.5 s"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("worst case: $5.00"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(home.run({"ps", "-a", "--format", "json"}).out, "[]\n");
}

// Point 6: every example `show --help` gives for a sweep runs (before: `--sort cost`, which
// failed with "unknown column 'cost'").
TEST(Truth, ShowHelpExamplesForASweepRun) {
  NodusHome home;
  ASSERT_EQ(home.run({"sweep", "-p", "a=1,2", "--", "true"}).code, 0);
  auto help = home.run({"show", "--help"});
  std::istringstream lines(help.out);
  int ran = 0;
  for (std::string line; std::getline(lines, line);) {
    static const std::regex example("^\\s+nodus show (s3.*)$");
    std::smatch m;
    if (!std::regex_match(line, m, example)) continue;
    std::vector<std::string> args = {"show"};
    std::istringstream words(m[1].str());
    for (std::string w; words >> w;) args.push_back(w == "s3" ? "s1" : w);
    auto r = home.run(args);
    EXPECT_EQ(r.code, 0) << line << ": " << r.err;
    ++ran;
  }
  EXPECT_GE(ran, 1) << help.out;
}

}  // namespace
}  // namespace nodus::testing
