// nodus sweep's values, objectives and repeats end to end: float and log ranges, --sample,
// metrics the job reports as columns, --objective, --sort, --repeat and the tie rule. The jobs
// are shell scripts that write JSON lines to $NODUS_METRICS and know nothing else of nodus.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

TEST(SweepValues, DryRunPutsValuesUnderTheirOwnColumns) {
  NodusHome home;
  // z is declared first: the cell's params object sorts a before z, the table must not.
  auto r = home.run(
      {"sweep", "--dry-run", "--param", "z=1,2", "--param", "a=x,y", "--", "echo", "{z}", "{a}"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string header = r.out.substr(0, r.out.find('\n'));
  EXPECT_LT(header.find(" z "), header.find(" a ")) << r.out;
  // Cell 2 is z=1 a=y: "2  1  y  echo 1 y".
  EXPECT_NE(r.out.find("2  1  y  echo 1 y"), std::string::npos) << r.out;
}

TEST(SweepValues, FloatAndLogRangesReachTheJobAsWritten) {
  NodusHome home;
  std::string out = home.file("args");
  auto r = home.run({"sweep", "--param", "lr=1e-5..1e-2:log4", "--param", "d=0.1..0.3:0.1",
                     "--format", "json", "--", "sh", "-c", "echo {lr} {d} >> " + out});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string got = read_file(out);
  for (const char* want : {"1e-5 0.1\n", "1e-4 0.2\n", "1e-3 0.3\n", "1e-2 0.1\n"})
    EXPECT_NE(got.find(want), std::string::npos) << want << " in " << got;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cells"].size(), 12u);
  EXPECT_EQ(j["cells"][0]["params"]["lr"], "1e-5");
}

TEST(SweepValues, SampleRunsASeededSubsetOfAGridTooLargeToRun) {
  NodusHome home;
  std::vector<std::string> args = {
      "sweep",  "--dry-run", "--param",  "a=1..1000", "--param", "b=1..1000", "--sample", "5",
      "--seed", "42",        "--format", "json",      "--",      "echo",      "{a}",      "{b}"};
  auto one = home.run(args);
  ASSERT_EQ(one.code, 0) << one.err;
  auto cells = nlohmann::json::parse(one.out);
  ASSERT_EQ(cells.size(), 5u);
  EXPECT_EQ(home.run(args).out, one.out) << "the same seed must pick the same cells";
  args[9] = "43";
  EXPECT_NE(home.run(args).out, one.out);
  // The whole grid is refused: a million cells.
  auto whole = home.run(
      {"sweep", "--dry-run", "--param", "a=1..1000", "--param", "b=1..1000", "--", "echo", "{a}"});
  EXPECT_EQ(whole.code, 125);
  // Run a sample for real: the table lists exactly the sampled cells.
  auto ran = home.run({"sweep", "--param", "a=1..100", "--param", "b=1..100", "--sample", "3",
                       "--format", "json", "--", "true"});
  ASSERT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(nlohmann::json::parse(ran.out)["cells"].size(), 3u);
}

// Writes loss and val_acc per cell: lr=1 reaches the best val_acc, lr=3 the lowest loss.
const char* kMetrics =
    "case {lr} in 1) l=0.9; a=0.91;; 2) l=0.5; a=0.70;; 3) l=0.2; a=0.40;; esac; "
    "echo \"{{\\\"loss\\\": $l, \\\"val_acc\\\": $a}}\" >> $NODUS_METRICS";

TEST(SweepObjective, MetricsTheJobReportsAreColumnsRankedAndSorted) {
  NodusHome home;
  auto r = home.run(
      {"sweep", "--param", "lr=1,2,3", "--objective", "val_acc:max", "--", "sh", "-c", kMetrics});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("lr=1: the best val_acc:max (0.91; runner-up lr=2: 0.7)"), std::string::npos)
      << r.out;
  auto j = nlohmann::json::parse(home.run({"show", "s1", "--format", "json"}).out);
  EXPECT_EQ(j["best_cell"], 1);
  EXPECT_EQ(j["sweep"]["objective"], "val_acc:max");
  EXPECT_EQ(j["cells"][2]["loss"], 0.2);
  auto sorted =
      home.run({"show", "s1", "--sort", "loss", "--format", "csv", "--columns", "lr,loss,val_acc"});
  ASSERT_EQ(sorted.code, 0) << sorted.err;
  EXPECT_EQ(sorted.out,
            "cell,lr,loss,val_acc,schema_version\n3,3,0.2,0.4,2\n2,2,0.5,0.7,2\n1,1,0.9,0.91,2\n");
  // Another objective at show time, and an unknown sort column names the ones there are.
  auto by_loss = home.run({"show", "s1", "--objective", "loss:min"});
  EXPECT_NE(by_loss.out.find("lr=3: the best loss:min"), std::string::npos) << by_loss.out;
  auto bad = home.run({"show", "s1", "--sort", "los"});
  EXPECT_EQ(bad.code, 125);
  EXPECT_NE(bad.err.find("loss"), std::string::npos) << bad.err;
  auto guess = home.run({"sweep", "--param", "a=1", "--objective", "loss", "--", "true"});
  EXPECT_EQ(guess.code, 125);
  EXPECT_NE(guess.err.find("loss:min"), std::string::npos) << guess.err;
}

TEST(SweepRepeat, RunsInterleavedAndRefusesToCallATie) {
  NodusHome home;
  std::string order = home.file("order");
  // Two identical cells, three runs each, throughput with run-to-run noise from the repeat
  // number: a tie that must not be called.
  std::string line =
      "echo \"{{\\\"samples_per_sec\\\": $((480 + 7 * "
      "($NODUS_SWEEP_REPEAT % 3)))}}\" >> $NODUS_METRICS; ";
  std::string script = "echo {w} >> " + order + "; " + line + line;
  auto r = home.run(
      {"sweep", "--param", "w=1,2", "--repeat", "3", "--parallel", "1", "--", "sh", "-c", script});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(order), "1\n2\n1\n2\n1\n2\n") << "runs must interleave across cells";
  EXPECT_NE(r.out.find("no best cell"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ± "), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(home.run({"show", "s1", "--format", "json"}).out);
  EXPECT_EQ(j["best_cell"], nullptr);
  ASSERT_EQ(j["cells"].size(), 2u);
  EXPECT_EQ(j["cells"][0]["runs"], 3);
  EXPECT_EQ(j["cells"][0]["job_ids"].size(), 3u);
  EXPECT_TRUE(j["cells"][0]["throughput_sd"].is_number());
  for (const auto& c : j["cells"]) EXPECT_NE(c["status"], "pending");
}

}  // namespace
}  // namespace nodus::testing

namespace nodus::testing {
namespace {

TEST(SweepStopEarly, StopsAClearlyWorseCellAndRecordsTheSavings) {
  NodusHome home;
  std::string prices = write_test_prices(home);
  std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "TEST:8"}, {"NODUS_PRICES", prices}};
  // w=1 does 1000 samples/s for about 5 s; w=2 does 10/s and would run for a minute. The best
  // cell's steady state starts a --warmup after nodus first read a report from it: with 2 s of
  // reports, a supervisor slowed by load (sanitizers and a busy loop per core) read the first
  // one so late that no steady state was left, and no best cell was named (a gate, 2026-12-05).
  std::string script =
      "if [ {w} = 1 ]; then n=25; v=1000; else n=300; v=10; fi; i=0; while [ $i -lt $n ]; do "
      "echo \"{{\\\"samples_per_sec\\\": $v}}\" >> $NODUS_METRICS; sleep 0.2; i=$((i+1)); done";
  auto r = home.run(
      {"sweep", "--gpu", kTestGpu, "--max-cost", "100", "--warmup", "1s", "--param", "w=1,2",
       "--parallel", "2", "--stop-early", "3", "--format", "json", "--", "sh", "-c", script},
      env);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_LT(r.seconds, 30);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cells"][0]["status"], "completed");
  EXPECT_EQ(j["cells"][1]["status"], "stopped-early");
  EXPECT_EQ(j["sweep"]["stopped_early"], 1);
  // 10 samples/s for the best cell's ~5 s x 1000/s of work: minutes left at $1/s.
  EXPECT_GT(j["sweep"]["saved_usd"].get<double>(), 50);
  EXPECT_EQ(j["best_cell"], 1);
  auto job = show_json(home, std::to_string(j["cells"][1]["job_id"].get<int>()));
  EXPECT_NE(job.dump().find("stopped early: its steady cost per sample was"), std::string::npos)
      << job.dump();
  auto bad = home.run({"sweep", "--param", "w=1", "--stop-early", "1", "--", "true"});
  EXPECT_EQ(bad.code, 125);
  auto metric = home.run(
      {"sweep", "--param", "w=1", "--stop-early", "2", "--objective", "loss:min", "--", "true"});
  EXPECT_EQ(metric.code, 125);
}

}  // namespace
}  // namespace nodus::testing
