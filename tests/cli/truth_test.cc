// Issue 29: what nodus says is what happens. Each case failed before its fix.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

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

// Point 1: the live countdown aims at SIGTERM, and `show` of a capped job names the limit, when
// SIGTERM and SIGKILL went out and the cost at each (before: "cap $X in 13.8s" while SIGTERM came
// 10 s earlier, and `show` named neither).
TEST(Truth, ShowOfACappedJobNamesTheLimitAndTheMomentsOfTermAndKill) {
  NodusHome home;
  const std::map<std::string, std::string> gpus = {{"NODUS_LOCAL_GPUS", "TEST:2"}};
  const std::string prices = write_test_prices(home);
  // $0.50 at $900/GPU-hour is 2 s; SIGKILL goes out 25 ms before (what the kill may take) and
  // SIGTERM 1 s of grace before that. sleep dies of SIGTERM.
  auto r = home.run({"run", "--gpu", "TEST:1", "--prices", prices, "--max-cost", "0.5", "--grace",
                     "1s", "--", "sleep", "30"},
                    gpus);
  EXPECT_EQ(r.code, 122) << r.err;
  auto shown = home.run({"show", "1"});
  EXPECT_NE(shown.out.find("SIGTERM at 975ms ($0.24), SIGKILL was due at 2.0s, not needed: cap "
                           "$0.50 at 2.0s, 1.0s grace; it ended at "),
            std::string::npos)
      << shown.out;
  auto j = show_json(home, "1");
  EXPECT_EQ(j["stop_plan"]["limit"], "cap $0.50 at 2.0s, 1.0s grace") << j;
  EXPECT_NEAR(j["stop_plan"]["term_s"].get<double>(), 0.975, 0.001) << j;
  EXPECT_NEAR(j["stop_plan"]["kill_s"].get<double>(), 1.975, 0.001) << j;
  // A job that ignores SIGTERM is killed at the cap (less the 25 ms the kill may take).
  auto stubborn = home.run({"run", "--gpu", "TEST:1", "--prices", prices, "--max-cost", "0.5",
                            "--grace", "1s", "--", "sh", "-c", "trap '' TERM; sleep 30"},
                           gpus);
  EXPECT_EQ(stubborn.code, 122) << stubborn.err;
  auto killed = home.run({"show", "2"});
  EXPECT_NE(killed.out.find("SIGTERM at 975ms ($0.24), SIGKILL at 2.0s ($0.49): cap $0.50"),
            std::string::npos)
      << killed.out;
  // A timeout: SIGTERM at the timeout, SIGKILL the grace later.
  auto timed = home.run({"run", "--timeout", "1s", "--grace", "1s", "--", "sleep", "30"});
  EXPECT_EQ(timed.code, 124) << timed.err;
  EXPECT_NE(home.run({"show", "3"})
                .out.find("SIGTERM at 1.0s, SIGKILL was due at 2.0s, not "
                          "needed: timeout 1.0s, then 1.0s grace"),
            std::string::npos);
  // A job that completed says nothing of stops that never came.
  home.run({"run", "--timeout", "1m", "--", "true"});
  EXPECT_EQ(home.run({"show", "4"}).out.find("SIGTERM"), std::string::npos);
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
  // Stopped by their cap, not failed (sacct keeps CANCELLED, FAILED and TIMEOUT apart).
  EXPECT_EQ(sweeps[0]["failed"], 0) << sweeps;
  EXPECT_EQ(sweeps[0]["stopped"], 2) << sweeps;
  EXPECT_EQ(home.run({"wait", "s1"}).code, 122);
}

// Point 2: cells whose figures never left warm-up are marked, and no best cell is named from
// them (before: the table starred one and the sentence said "4.0x the throughput").
TEST(Truth, ASweepOfCellsThatNeverLeaveWarmUpNamesNoBestCellAndSaysWhy) {
  NodusHome home;
  // Two quick reports each: the job is over long before the default 5 s of warm-up.
  std::string script =
      "echo '{{\"samples_per_sec\": '$((100 * {w}))'}}' >> $NODUS_METRICS; "
      "echo '{{\"samples_per_sec\": '$((100 * {w}))'}}' >> $NODUS_METRICS";
  auto r = home.run({"sweep", "--param", "w=1,4", "--", "sh", "-c", script});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("no best cell: not compared on throughput: w=1, w=4 (still in warm-up at "
                       "the end): their figures include the warm-up"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("completed (warm-up only)"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(home.run({"show", "s1", "--format", "json"}).out);
  EXPECT_EQ(j["best_cell"], nullptr) << j;
  EXPECT_EQ(j["cells"][0]["steady"], false) << j;
  // Told that the figures are fine as they are, nodus ranks them.
  auto ranked = home.run({"sweep", "--warmup", "0s", "--param", "w=1,4", "--", "sh", "-c", script});
  ASSERT_EQ(ranked.code, 0) << ranked.err;
  EXPECT_NE(ranked.out.find("w=4: 4.0x the throughput of the runner-up w=1"), std::string::npos)
      << ranked.out;
}

// Point 3: one column per quantity. The job's own samples_per_sec and data_wait are the source of
// nodus's THROUGHPUT and DATA WAIT, not columns beside them.
TEST(Truth, TheJobsOwnThroughputAndDataWaitAreNotSecondColumns) {
  NodusHome home;
  std::string script =
      "echo '{{\"samples_per_sec\": 300, \"data_wait\": 0.5, \"loss\": 0.{w}}}' >> "
      "$NODUS_METRICS";
  auto r = home.run({"sweep", "--warmup", "0s", "--param", "w=1,4", "--format", "json", "--", "sh",
                     "-c", script});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const auto& cell = j["cells"][0];
  EXPECT_EQ(cell["throughput"], 300) << cell;
  EXPECT_EQ(cell["data_wait"], 0.5) << cell;
  EXPECT_FALSE(cell.contains("samples_per_sec")) << cell;
  EXPECT_FALSE(cell.contains("metric_data_wait")) << cell;
  EXPECT_EQ(cell["loss"], 0.1) << cell;  // a quantity nodus does not measure stays a column
  auto table = home.run({"show", "s1"});
  EXPECT_EQ(table.out.find("samples_per_sec"), std::string::npos) << table.out;
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

// Point 6: `sweep --help` leads with --param (it came after 28 run flags).
TEST(Truth, SweepHelpLeadsWithTheGrid) {
  NodusHome home;
  auto help = home.run({"sweep", "--help"});
  size_t param = help.out.find("-p,--param");
  ASSERT_NE(param, std::string::npos) << help.out;
  EXPECT_LT(param, help.out.find("--gpu")) << help.out;
}

// Point 5: the end of a job is one line: outcome, time, cost and where to look next, without
// the CPU and containment plumbing (it is in `show`); `wait` says what it waits for; show's
// throughput is not "436.130000" (a cell that never ran: SweepCompare.ACellThatNeverRan...).
TEST(Truth, TheOutcomeIsOneLineAndWaitSaysWhatItWaitsFor) {
  NodusHome home;
  auto r = home.run({"run", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.code, 3);
  const std::string last = r.err.substr(r.err.rfind("nodus: "));
  EXPECT_EQ(last.rfind("nodus: job 1 failed (exit 3) after ", 0), 0u) << r.err;
  EXPECT_NE(last.find("; its output: nodus logs 1\n"), std::string::npos) << last;
  EXPECT_EQ(last.find("contained by"), std::string::npos) << last;
  EXPECT_EQ(last.find("sched_setaffinity"), std::string::npos) << last;
  EXPECT_NE(show_json(home, "1")["note"].get<std::string>().find("contained by"),
            std::string::npos);  // still in the record

  // The detached job ends only once `wait` has said what it waits for, however slow the
  // machine: a `sleep 1` could end before `wait` started, under sanitizers on a loaded machine.
  const std::string go = home.file("go");
  auto detached = home.run({"run", "-d", "--timeout", "1m", "--", "sh", "-c",
                            "while [ ! -e " + go + " ]; do sleep 0.05; done"});
  ASSERT_EQ(detached.code, 0) << detached.err;
  const std::string wait_out = home.file("wait.out");
  pid_t waiter = home.start({"wait", "2"}, {}, wait_out);
  for (int i = 0;
       i < 600 && read_file(wait_out + ".err").find("waiting for job 2 ") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  write_file(go, "");
  EXPECT_EQ(wait_exit(waiter, std::chrono::seconds(60)), 0);
  const std::string waited = read_file(wait_out + ".err");
  EXPECT_NE(waited.find("nodus: waiting for job 2 "), std::string::npos) << waited;
  EXPECT_NE(waited.find("nodus: job 2 completed after "), std::string::npos) << waited;

  std::string script = "echo '{{\"samples_per_sec\": 436.13}}' >> $NODUS_METRICS";
  auto sweep = home.run({"sweep", "--warmup", "0s", "-p", "a=1", "--", "sh", "-c", script});
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  auto shown = home.run({"show", "3"});
  EXPECT_NE(shown.out.find("throughput       436 samples_per_sec"), std::string::npos) << shown.out;
}

// Point 4: a cell has one number. `show 3` said "sweep s1 cell 3" while the job had been given
// NODUS_SWEEP_CELL=2 (0-based); ps's s1:3, show's cell 3 and the job's variable now agree.
TEST(Truth, TheCellNumberTheJobSeesIsTheOnePsAndShowPrint) {
  NodusHome home;
  const std::string seen = home.file("seen");
  auto r = home.run({"sweep", "-p", "w=a,b,c", "--", "sh", "-c",
                     "echo \"$NODUS_PARAM_W $NODUS_SWEEP_CELL\" >> " + seen});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string got = read_file(seen);
  EXPECT_NE(got.find("a 1\n"), std::string::npos) << got;
  EXPECT_NE(got.find("c 3\n"), std::string::npos) << got;
  auto third = show_json(home, "3");
  ASSERT_EQ(third["params"]["w"], "c") << third.dump();
  EXPECT_EQ(third["cell"], 3) << third.dump();
  EXPECT_NE(home.run({"show", "3"}).out.find("s1 cell 3"), std::string::npos);
  auto ps = home.run({"ps", "-a"});
  EXPECT_NE(ps.out.find("s1:3"), std::string::npos) << ps.out;
}

}  // namespace
}  // namespace nodus::testing
