// nodus sweep end to end: packing, budget, resume, hostile values, output formats.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

TEST(Sweep, PacksOneGpuCellsOntoFreeGpus) {
  NodusHome home;
  // 4 one-GPU cells of 1 s on a 2-GPU box finish in about 2 s.
  auto r = home.run(
      {"sweep", "--gpu", "H100", "--param", "i=1..4", "--format", "json", "--", "sleep", "1"},
      {{"NODUS_LOCAL_GPUS", "H100:2"}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["cells"].size(), 4u);
  for (const auto& c : j["cells"]) EXPECT_EQ(c["status"], "completed");
  EXPECT_LT(r.seconds, 3.8) << "4 cells of 1 s on 2 GPUs should take about 2 s";
  EXPECT_GT(r.seconds, 1.9);
}

// --gpu H100:{g}: each cell claims its own count, one sweep packs both onto the same GPUs, and
// the dry run shows each cell's GPUs and worst case.
TEST(Sweep, EachCellClaimsTheGpusItsParamAsksFor) {
  NodusHome home;
  std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "H100:2"}};
  auto dry = home.run({"sweep", "--dry-run", "--gpu", "H100:{g}", "--timeout", "1h", "-p", "g=1,2",
                       "--format", "json", "--", "true"},
                      env);
  ASSERT_EQ(dry.code, 0) << dry.err;
  auto plan = nlohmann::json::parse(dry.out);
  ASSERT_EQ(plan.size(), 2u);
  // The catalog's name of the type (H100-SXM for H100), and each cell's count.
  EXPECT_TRUE(plan[0]["gpu_request"].get<std::string>().ends_with(":1")) << plan[0];
  EXPECT_TRUE(plan[1]["gpu_request"].get<std::string>().ends_with(":2")) << plan[1];
  EXPECT_NE(dry.err.find("2 cells, "), std::string::npos) << dry.err;  // two worst cases
  EXPECT_NE(dry.err.find(" each)"), std::string::npos) << dry.err;

  const std::string log = home.file("gpus");
  auto r = home.run(
      {"sweep", "--gpu", "H100:{g}", "-p", "g=2,1", "-p", "i=1..2", "--format", "json", "--", "sh",
       "-c", "echo \"$NODUS_PARAM_G $CUDA_VISIBLE_DEVICES\" >> " + log + "; sleep 0.2"},
      env);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["cells"].size(), 4u);
  for (const auto& c : j["cells"]) EXPECT_EQ(c["status"], "completed");
  std::istringstream lines(read_file(log));
  std::string g, devices;
  int twos = 0, ones = 0;
  while (lines >> g >> devices) {
    if (g == "2") {
      EXPECT_EQ(devices, "0,1");
      ++twos;
    } else {
      EXPECT_TRUE(devices == "0" || devices == "1") << devices;
      ++ones;
    }
  }
  EXPECT_EQ(twos, 2);
  EXPECT_EQ(ones, 2);
  // Every claim was released: a run on both GPUs gets them.
  auto after = home.run({"run", "--gpu", "H100:2", "--", "true"}, env);
  EXPECT_EQ(after.code, 0) << after.err;
}

TEST(Sweep, ValuesReachTheJobAsArgumentsAndEnvironmentNeverThroughAShell) {
  NodusHome home;
  std::string out = home.file("args");
  auto r = home.run(
      {"sweep", "--param", "v=$(touch " + home.file("pwned") + "),;touch " + home.file("pwned2"),
       "--", "sh", "-c", "printf '%s|%s\\n' \"$1\" \"$NODUS_PARAM_V\" >> " + out, "sh", "{v}"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string got = read_file(out);
  EXPECT_NE(got.find("$(touch " + home.file("pwned") + ")|$(touch " + home.file("pwned") + ")"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find(";touch " + home.file("pwned2") + "|;touch"), std::string::npos) << got;
  EXPECT_TRUE(read_file(home.file("pwned")).empty());
  EXPECT_FALSE(std::ifstream(home.file("pwned")).good());
  EXPECT_FALSE(std::ifstream(home.file("pwned2")).good());
}

TEST(Sweep, UnknownPlaceholderFailsBeforeAnythingRuns) {
  NodusHome home;
  auto r = home.run({"sweep", "--param", "a=1,2", "--", "echo", "{b}"});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find("{b}"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out).size(), 0u);
}

TEST(Sweep, DryRunPrintsCellsAndWorstCaseAndRunsNothing) {
  NodusHome home;
  auto r = home.run({"sweep", "--dry-run", "--gpu", "H100", "--max-cost", "2", "--param", "a=1,2",
                     "--param", "b=64..256:x2", "--", "echo", "{a}", "{b}"},
                    {{"NODUS_LOCAL_GPUS", "H100:1"}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("6 cells"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$12.00"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("echo 2 256"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 0u);
}

TEST(Sweep, BudgetIsNeverExceeded) {
  NodusHome home;
  std::string prices = write_test_prices(home);
  std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "TEST:8"}, {"NODUS_PRICES", prices}};
  // $1/s per GPU; each cell may cost $1.5; the budget covers two cells' worst case, not three.
  auto r =
      home.run({"sweep", "--gpu", kTestGpu, "--max-cost", "1.5", "--grace", "200ms", "--budget",
                "3.2", "--param", "i=1..3", "--format", "json", "--", "sleep", "10"},
               env);
  EXPECT_EQ(r.code, 122) << r.err;
  auto j = nlohmann::json::parse(r.out);
  double total = 0;
  int ran = 0;
  for (const auto& c : j["cells"]) {
    total += c["cost_usd"].is_number() ? c["cost_usd"].get<double>() : 0;
    ran += c["status"] == "cost-cap";
  }
  EXPECT_LE(total, 3.2);
  EXPECT_EQ(ran, 2) << r.out;
}

TEST(Sweep, UnboundedCellsUnderABudgetRunAloneCappedAtWhatIsLeft) {
  NodusHome home;
  std::string prices = write_test_prices(home);
  std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "TEST:8"}, {"NODUS_PRICES", prices}};
  auto r = home.run({"sweep", "--gpu", kTestGpu, "--grace", "200ms", "--budget", "1.5", "--param",
                     "i=1..2", "--format", "json", "--", "sleep", "10"},
                    env);
  EXPECT_EQ(r.code, 122) << r.err;
  auto j = nlohmann::json::parse(r.out);
  double total = 0;
  for (const auto& c : j["cells"])
    total += c["cost_usd"].is_number() ? c["cost_usd"].get<double>() : 0;
  EXPECT_LE(total, 1.5);
  EXPECT_GT(total, 1.2);
  EXPECT_EQ(j["cells"][0]["status"], "budget");
}

TEST(Sweep, ResumeRerunsOnlyUnfinishedCellsAndRefusesAChangedDefinition) {
  NodusHome home;
  std::string marks = home.file("marks");
  std::vector<std::string> args = {"sweep",
                                   "--param",
                                   "i=1..3",
                                   "--",
                                   "sh",
                                   "-c",
                                   "echo {i} >> " + marks + "; if [ {i} = 3 ] && [ ! -e " +
                                       home.file("ok") + " ]; then exit 1; fi"};
  auto first = home.run(args);
  EXPECT_EQ(first.code, 1) << first.err;
  write_file(home.file("ok"), "");
  std::vector<std::string> resume = {"sweep", "--resume", "s1"};
  auto again = home.run(resume);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(read_file(marks), "1\n2\n3\n3\n");
  auto changed = args;
  changed.insert(changed.begin() + 1, {"--resume", "s1"});
  changed[4] = "i=1..4";
  auto refused = home.run(changed);
  EXPECT_EQ(refused.code, 125);
  EXPECT_NE(refused.err.find("definition changed"), std::string::npos) << refused.err;
}

// `--resume s1` alone runs the cells as they were defined: a flag that would change them (a new
// --max-cost, --timeout, --env, --param) is refused, with nothing run or stored, rather than
// dropped without a word; the same value as the sweep's, and a new --budget, are taken.
TEST(Sweep, ResumeRefusesFlagsThatWouldChangeTheCellsAndRecordsANewBudget) {
  NodusHome home;
  const std::map<std::string, std::string> gpus = {{"NODUS_LOCAL_GPUS", "H100:2"}};
  const std::string ok = home.file("ok");
  auto first = home.run({"sweep", "--gpu", "H100", "--rate", "360", "--budget", "5", "--grace",
                         "100ms", "-p", "a=1", "--", "sh", "-c", "[ -e " + ok + " ]"},
                        gpus);
  ASSERT_EQ(first.code, 1) << first.err;
  write_file(ok, "");
  auto jobs = [&] { return nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out); };
  const size_t before = jobs().size();
  struct Refused {
    std::vector<std::string> flags;
    std::string says;
  };
  for (const Refused& r : std::vector<Refused>{
           {{"--max-cost", "0.2"}, "--max-cost '0.2' is not the sweep's (none)"},
           {{"--timeout", "2s"}, "--timeout '2s' is not the sweep's (none)"},
           {{"--env", "HF_TOKEN=hf_secretvalue123"}, "--env differs from the sweep's"},
           {{"-p", "a=2"}, "--param 'a=2' is not the sweep's ('a=1')"},
           {{"--gpu", "H100:2"}, "--gpu 'H100:2' is not the sweep's ('H100')"}}) {
    std::vector<std::string> args = {"sweep", "--resume", "s1"};
    args.insert(args.end(), r.flags.begin(), r.flags.end());
    auto refused = home.run(args, gpus);
    EXPECT_EQ(refused.code, 125) << refused.err;
    EXPECT_NE(refused.err.find(r.says), std::string::npos) << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    EXPECT_EQ(refused.err.find("hf_secretvalue123"), std::string::npos) << refused.err;
  }
  EXPECT_EQ(jobs().size(), before);
  auto resumed = home.run({"sweep", "--resume", "s1", "--gpu", "H100", "--budget", "20"}, gpus);
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  auto sweeps = nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out);
  EXPECT_EQ(sweeps[0]["state"], "completed");
  EXPECT_EQ(sweeps[0]["budget_usd"], 20.0) << sweeps;
}

// A sweep whose only unfinished cell hit its --timeout ended by the timeout, not by a failure:
// state timeout, exit 124, and no failed cell counted.
TEST(Sweep, ACellsTimeoutIsTheSweepsStateNotAFailure) {
  NodusHome home;
  auto r = home.run(
      {"sweep", "-p", "s=0,30", "--timeout", "1s", "--grace", "100ms", "--", "sleep", "{s}"});
  EXPECT_EQ(r.code, 124) << r.err;
  auto sweeps = nlohmann::json::parse(home.run({"sweeps", "--format", "json"}).out);
  EXPECT_EQ(sweeps[0]["state"], "timeout");
  EXPECT_EQ(sweeps[0]["failed"], 0);
  EXPECT_EQ(sweeps[0]["stopped"], 1);
}

// Cells without GPUs at the machine's --rate cost money: their worst case says so, and a
// --budget holds them (without a rate a budget has nothing to count, and is refused).
TEST(Sweep, CellsWithoutGpusAtARateHaveAWorstCaseAndABudget) {
  NodusHome home;
  auto plan = home.run({"sweep", "--dry-run", "--rate", "360", "--max-cost", "0.15", "-p", "s=1,3",
                        "--", "sleep", "{s}"});
  EXPECT_EQ(plan.code, 0) << plan.err;
  EXPECT_NE(plan.err.find("worst case $0.30 (2 x $0.15)"), std::string::npos) << plan.err;
  auto run = home.run({"run", "--dry-run", "--rate", "900", "--timeout", "10s", "--", "true"});
  EXPECT_NE((run.out + run.err).find("worst case: $5.00"), std::string::npos) << run.out << run.err;
  auto budget = home.run({"sweep", "--rate", "360", "--budget", "5", "--grace", "100ms", "-p",
                          "s=0,0.1", "--", "sleep", "{s}"});
  EXPECT_EQ(budget.code, 0) << budget.err;
}

TEST(Sweep, KilledSweepKeepsFinishedCellsAndResumes) {
  NodusHome home;
  pid_t sweep = home.start(
      {"sweep", "--param", "i=1..3", "--", "sh", "-c", "if [ {i} = 3 ]; then sleep 60; fi"});
  double until = now_seconds() + 20;
  int done = 0;
  while (now_seconds() < until && done < 2) {
    auto ps = nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out);
    done = 0;
    for (const auto& j : ps) done += j["state"] == "completed";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(done, 2);
  kill(sweep, SIGKILL);
  wait_exit(sweep, std::chrono::seconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto check = home.run({"sweeps", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(check.out)[0]["state"], "lost") << check.out;
  // The definition's command would hang on cell 3 again: resume with a quick one is refused,
  // so resume the same one and stop it; here it is enough that only cell 3 is pending.
  auto show = nlohmann::json::parse(home.run({"show", "s1", "--format", "json"}).out);
  int completed = 0;
  for (const auto& c : show["cells"]) completed += c["status"] == "completed";
  EXPECT_EQ(completed, 2);
}

TEST(Sweep, ShowPrintsTheSameTableInEveryFormat) {
  NodusHome home;
  // JSON braces are written {{ }}: single braces are placeholders.
  std::string script =
      "echo '{{\"samples_per_sec\": '$((100 * {w}))', \"data_wait\": 0.1}}' >> $NODUS_METRICS; "
      "echo '{{\"samples_per_sec\": '$((100 * {w}))', \"data_wait\": 0.1}}' >> $NODUS_METRICS";
  // --warmup 0s: the two reports are the steady state (there is no time for a warm-up).
  auto r = home.run({"sweep", "--warmup", "0s", "--param", "w=1,4", "--", "sh", "-c", script});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("w=4: 4.0x the throughput of the runner-up w=1"), std::string::npos)
      << r.out;
  auto md = home.run({"show", "s1", "--format", "md"});
  EXPECT_NE(md.out.find("| CELL |"), std::string::npos) << md.out;
  auto csv = home.run({"show", "s1", "--format", "csv", "--sort", "throughput"});
  EXPECT_EQ(csv.out.substr(0, 5), "cell,") << csv.out;
  auto j = nlohmann::json::parse(home.run({"show", "s1", "--format", "json"}).out);
  EXPECT_EQ(j["cells"][1]["throughput"], 400);
  EXPECT_EQ(j["best_cell"], 2);
}

TEST(Sweep, MetricRegexReadsThroughputFromOutput) {
  NodusHome home;
  auto r = home.run({"sweep", "--param", "n=1,2", "--metric-regex",
                     "samples_per_sec='train_samples_per_second': ([0-9.]+)", "--format", "json",
                     "--", "sh", "-c",
                     "echo \"{{'train_samples_per_second': 12.5}}\"; echo "
                     "\"{{'train_samples_per_second': 1{n}.5}}\""});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_DOUBLE_EQ(j["cells"][1]["throughput"].get<double>(), 12.5);
}

}  // namespace
}  // namespace nodus::testing
