// Prices a renter can trust (catalog merge, --rate, a CPU box's rate), estimate's durations,
// logs --tail and -f's exit status, report on a terminal, cost groupings, completion and the
// man page: the real binary end to end.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

// A user catalog with one entry, H100 at $1.00: it replaces the built-in H100-SXM, nothing else.
std::string one_entry_catalog(const NodusHome& home) {
  std::string path = home.file("mine.json");
  write_file(path, R"({"gpus": [{"type": "H100", "usd_per_gpu_hour": 1.0,
    "source": "our contract", "checked": "2026-11-30"}]})");
  return path;
}

nlohmann::json prices_json(const NodusHome& home, std::vector<std::string> args) {
  args.insert(args.begin(), "prices");
  args.insert(args.end(), {"--format", "json"});
  auto r = home.run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

const nlohmann::json* find_type(const nlohmann::json& rows, const std::string& type) {
  for (const auto& row : rows)
    if (row["type"] == type) return &row;
  return nullptr;
}

TEST(Prices, AUserCatalogMergesOverTheBuiltInOne) {
  NodusHome home;
  std::string mine = one_entry_catalog(home);
  auto builtin = prices_json(home, {});
  auto merged = prices_json(home, {"--prices", mine});
  // One entry replaced (H100-SXM, whose alias H100 it names), every other type kept.
  EXPECT_EQ(merged.size(), builtin.size());
  EXPECT_EQ(find_type(merged, "H100-SXM"), nullptr);
  const auto* h100 = find_type(merged, "H100");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ((*h100)["usd_per_gpu_hour"], 1.0);
  EXPECT_EQ((*h100)["origin"], mine);
  ASSERT_NE(find_type(merged, "L4"), nullptr);
  EXPECT_EQ((*find_type(merged, "L4"))["origin"], "built-in");
  // Alone: only the user's entry.
  auto alone = prices_json(home, {"--prices", mine, "--prices-only"});
  ASSERT_EQ(alone.size(), 1u);
  auto env_alone = home.run({"prices", "--format", "json"},
                            {{"NODUS_PRICES", mine}, {"NODUS_PRICES_ONLY", "1"}});
  EXPECT_EQ(nlohmann::json::parse(env_alone.out).size(), 1u) << env_alone.err;
  // A job priced by the merged catalog: --gpu H100 is the user's $1.00.
  auto r = home.run({"run", "--gpu", "H100", "--prices", mine, "--", "true"},
                    {{"NODUS_LOCAL_GPUS", "H100:1"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(show_json(home, "1")["usd_per_gpu_hour"], 1.0);
  // --prices-only with nothing to stand alone is an error, not the built-in catalog.
  auto bad = home.run({"prices", "--prices-only"});
  EXPECT_EQ(bad.code, 125);
  EXPECT_NE(bad.err.find("--prices-only"), std::string::npos) << bad.err;
}

TEST(Prices, EveryBuiltInEntryNamesItsSourceWithAUrlWhereOneExistsAndADate) {
  NodusHome home;
  for (const auto& row : prices_json(home, {})) {
    SCOPED_TRACE(row.dump());
    bool url = row["source_url"].is_string() &&
               row["source_url"].get<std::string>().rfind("https://", 0) == 0;
    ASSERT_TRUE(row["source"].is_string());  // every rate names where it was read
    EXPECT_TRUE(url || row["note"].get<std::string>().find("no public URL") != std::string::npos);
    ASSERT_TRUE(row["checked"].is_string());
    EXPECT_EQ(row["checked"].get<std::string>().size(), 10u);
  }
  auto table = home.run({"prices"});
  // H100 (H100-SXM) is priced from the Nodus pricing page: the table names it, not "none".
  EXPECT_NE(table.out.find("Nodus GPU cloud pricing page"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find(" none "), std::string::npos) << table.out;
}

TEST(Rate, PricesTheJobAtTheRateActuallyPaidPerGpuOrForTheBox) {
  NodusHome home;
  std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "H100:4"}};
  ASSERT_EQ(home.run({"run", "--gpu", "H100:4", "--rate", "2", "--", "true"}, env).code, 0);
  EXPECT_EQ(show_json(home, "1")["usd_per_gpu_hour"], 2.0);  // per GPU by default
  ASSERT_EQ(
      home.run({"run", "--gpu", "H100:4", "--rate", "10", "--rate-per", "box", "--", "true"}, env)
          .code,
      0);
  EXPECT_DOUBLE_EQ(show_json(home, "2")["usd_per_gpu_hour"].get<double>(), 2.5);  // $10 / 4
  // The box rate bills the whole box: 4 GPUs x $2.50 = $10/h, checked on a 1 s job's cost.
  auto j = show_json(home, "2");
  double wall = j["wall_s"].get<double>();
  EXPECT_NEAR(j["cost_usd"].get<double>(), 10.0 * wall / 3600, 1e-9);
  // Bad rates: one line naming the value, 125, nothing stored.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "--rate", "-1", "--", "true"},
           {"run", "--rate", "abc", "--", "true"},
           {"run", "--gpu", "H100", "--rate", "5000", "--", "true"},
           {"run", "--rate-per", "box", "--", "true"},
           {"run", "--rate", "1", "--rate-per", "node", "--", "true"}}) {
    auto r = home.run(args, env);
    EXPECT_EQ(r.code, 125) << args[2] << ": " << r.err;
    EXPECT_NE(r.err.find("--rate"), std::string::npos) << r.err;
  }
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 2u);
}

TEST(Rate, ACpuOnlyBoxIsBilledAtItsDeclaredHourlyRate) {
  NodusHome home;
  // $3600/h is $1 a second: a 1 s job costs about $1, and --max-cost now has a rate to cap.
  std::map<std::string, std::string> env{{"NODUS_LOCAL_USD_PER_HOUR", "900"}};
  ASSERT_EQ(home.run({"run", "--", "sleep", "0.5"}, env).code, 0);
  auto j = show_json(home, "1");
  EXPECT_EQ(j["usd_per_gpu_hour"], 900.0);
  EXPECT_NEAR(j["cost_usd"].get<double>(), 900 * j["wall_s"].get<double>() / 3600, 1e-9);
  EXPECT_GT(j["cost_usd"].get<double>(), 0.1);
  auto cost = nlohmann::json::parse(home.run({"cost", "--format", "json"}).out);
  EXPECT_NEAR(cost["total"]["cost_usd"].get<double>(), j["cost_usd"].get<double>(), 1e-9);
  // The cap bites on a CPU box too: $900/h, $0.25 cap = 1 s.
  auto capped = home.run({"run", "--max-cost", "0.25", "--", "sleep", "30"}, env);
  EXPECT_EQ(capped.code, 122) << capped.err;
  // Without a declared rate, a CPU job still has nothing to cap.
  auto none = home.run({"run", "--max-cost", "5", "--", "true"});
  EXPECT_EQ(none.code, 125);
  EXPECT_NE(none.err.find("NODUS_LOCAL_USD_PER_HOUR"), std::string::npos) << none.err;
  auto bad = home.run({"run", "--", "true"}, {{"NODUS_LOCAL_USD_PER_HOUR", "lots"}});
  EXPECT_EQ(bad.code, 125);
  EXPECT_NE(bad.err.find("NODUS_LOCAL_USD_PER_HOUR"), std::string::npos) << bad.err;
}

TEST(Estimate, HoursTakeDurationsAndABareNumberIsHours) {
  NodusHome home;
  auto day = home.run(
      {"estimate", "--gpu", "H100:8", "--hours", "1d", "--util", "40", "--format", "json"});
  ASSERT_EQ(day.code, 0) << day.err;
  auto hours = home.run(
      {"estimate", "--gpu", "H100:8", "--hours", "24", "--util", "40", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(day.out), nlohmann::json::parse(hours.out));
  auto minutes = home.run({"estimate", "--gpu", "H100", "--hours", "90m", "--util", "40"});
  ASSERT_EQ(minutes.code, 0) << minutes.err;
  EXPECT_NE(minutes.out.find("1.5 h"), std::string::npos) << minutes.out;
  auto bad = home.run({"estimate", "--gpu", "H100", "--hours", "soon", "--util", "40"});
  EXPECT_EQ(bad.code, 125);
  EXPECT_NE(bad.err.find("'soon'"), std::string::npos) << bad.err;
}

TEST(Estimate, AShortJobIsNotZeroHours) {
  NodusHome home;
  std::map<std::string, std::string> env{
      {"NODUS_LOCAL_GPUS", "TEST:1"},
      {"NODUS_PRICES", write_test_prices(home)},
      {"NODUS_NVIDIA_SMI", std::string(NODUS_TEST_DATA) + "/pytorch/nvidia-smi-standin.sh"},
      {"STANDIN_UTIL", "40"}};
  ASSERT_EQ(
      home.run({"run", "--gpu", "TEST:1", "--sample-interval", "100ms", "--", "sleep", "3"}, env)
          .code,
      0);
  auto r = home.run({"estimate", "1"}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find(" 0 h"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find(" 0 h"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("s "), std::string::npos) << r.out;  // seconds, e.g. "3.1s"
}

TEST(Logs, TailPrintsTheLastLines) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "seq", "1", "100000"}).code, 0);
  EXPECT_EQ(home.run({"logs", "1", "--tail", "3"}).out, "99998\n99999\n100000\n");
  EXPECT_EQ(home.run({"logs", "1", "-n", "0"}).out, "");
  EXPECT_EQ(home.run({"logs", "1", "--tail", "1000000"}).out.size(),
            home.run({"logs", "1"}).out.size());
  ASSERT_EQ(home.run({"run", "--", "printf", "a\\nb"}).code, 0);  // no final newline
  EXPECT_EQ(home.run({"logs", "2", "--tail", "1"}).out, "b");
  EXPECT_EQ(home.run({"logs", "1", "--tail", "x"}).code, 125);
}

TEST(Logs, FollowExitsWithTheJobsExitStatus) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "sh", "-c", "echo out; exit 3"}).code, 3);
  auto r = home.run({"logs", "-f", "1"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(home.run({"logs", "1"}).code, 0);  // without -f, printing it worked: 0
  ASSERT_EQ(home.run({"run", "--timeout", "1s", "--", "sleep", "30"}).code, 124);
  EXPECT_EQ(home.run({"logs", "-f", "2"}).code, 124);
}

TEST(Logs, StdoutAndStderrAreKeptApartAndMergedInPrintedOrderByDefault) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "sh", "-c",
                      "echo out1; echo err1 >&2; sleep 1.2; echo out2; echo err2 >&2"})
                .code,
            0);
  EXPECT_EQ(home.run({"logs", "1", "--stream", "stdout"}).out, "out1\nout2\n");
  EXPECT_EQ(home.run({"logs", "1", "--stream", "stderr"}).out, "err1\nerr2\n");
  EXPECT_EQ(home.run({"logs", "1", "--stream", "stderr", "--tail", "1"}).out, "err2\n");
  std::string all = home.run({"logs", "1"}).out;
  EXPECT_LT(all.find("out1"), all.find("out2"));
  EXPECT_LT(all.find("err1"), all.find("out2"));  // before the sleep, so before out2
  EXPECT_EQ(home.run({"logs", "1", "--stream", "all"}).out, all);
  EXPECT_EQ(home.run({"logs", "-f", "1", "--stream", "stdout"}).out, "out1\nout2\n");
  EXPECT_EQ(home.run({"logs", "1", "--stream", "both"}).code, 125);
}

TEST(Logs, SinceStartsAtTheOutputOfTheLastDuration) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "sh", "-c", "echo early; sleep 4; echo late"}).code, 0);
  EXPECT_EQ(home.run({"logs", "1", "--since", "2s"}).out, "late\n");
  EXPECT_EQ(home.run({"logs", "1", "--since", "1h"}).out, "early\nlate\n");
  EXPECT_EQ(home.run({"logs", "1", "--since", "soon"}).code, 125);
}

TEST(Logs, TheStreamIndexStaysSmallUnderAFloodFromBothStreams) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "sh", "-c",
                      "yes out | head -c 4000000 & yes err | head -c 4000000 >&2; wait"})
                .code,
            0);
  struct stat log {
  }, index{};
  ASSERT_EQ(stat(home.file("logs/1.log").c_str(), &log), 0);
  ASSERT_EQ(stat(home.file("logs/1.log.streams").c_str(), &index), 0);
  EXPECT_EQ(log.st_size, 8000000);
  EXPECT_LT(index.st_size, log.st_size / 100) << index.st_size;  // records per switch, not byte
  std::string out = home.run({"logs", "1", "--stream", "stdout"}).out;
  EXPECT_EQ(out.size(), 4000000u);
  EXPECT_EQ(out.find("err"), std::string::npos);
}

// Runs `command` in a pseudo-terminal (script(1)) in `dir`; returns what the terminal showed.
std::string on_a_terminal(const NodusHome& home, const std::string& dir,
                          const std::string& command) {
  std::string line = "cd '" + dir + "' && NODUS_HOME='" + home.path() + "' script -qec \"" +
                     command + "\" /dev/null";
  FILE* p = popen(line.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(LiveStatus, OnATerminalShowsCostAndTimeLeftBelowTheJobsIntactOutput) {
  NodusHome home;
  std::string prices = write_test_prices(home);
  std::string run =
      "stty rows 24 cols 100; unset CI; NODUS_LOCAL_GPUS=TEST:4 NODUS_PRICES=" + prices + " " +
      std::string(NODUS_BIN) +
      " run --gpu TEST:1 --timeout 1m --max-cost 5 -- sh -c 'echo first line; "
      "sleep 2.5; echo second line'";
  std::string shown = on_a_terminal(home, home.path(), run);
  // The job's lines arrive whole, each ending its line.
  EXPECT_NE(shown.find("first line\r\n"), std::string::npos) << shown;
  EXPECT_NE(shown.find("second line\r\n"), std::string::npos) << shown;
  // The status line: on row 24, scroll region 1-23, with cost so far and both limits.
  EXPECT_NE(shown.find("\x1b[1;23r"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\x1b[24;1H"), std::string::npos) << shown;
  // The next stop and why: $5 at $900/GPU-hour is reached at 20 s; SIGTERM goes out the 10 s
  // grace before it. The later timeout is shown too.
  EXPECT_NE(shown.find("so far | SIGTERM in "), std::string::npos) << shown;
  EXPECT_NE(shown.find("(cap $5.00 at 20.0s, 10.0s grace) | timeout in "), std::string::npos)
      << shown;
  EXPECT_NE(shown.find("\x1b[r"), std::string::npos) << shown;  // the terminal given back
  // NO_COLOR: the same line without color; piped: no status line at all.
  std::string plain = on_a_terminal(home, home.path(), "export NO_COLOR=1; " + run);
  EXPECT_NE(plain.find("so far"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("\x1b[2m"), std::string::npos) << plain;
  auto piped = home.run({"run", "--", "sh", "-c", "echo hi; sleep 1.2"});
  EXPECT_EQ(piped.err.find("so far"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("\x1b["), std::string::npos) << piped.err;
  EXPECT_EQ(piped.out, "hi\n");
}

TEST(Report, OnATerminalWritesAFileAndPrintsItsPath) {
  NodusHome home;
  ASSERT_EQ(home.run({"run", "--", "true"}).code, 0);
  std::string dir = home.file("here");
  std::filesystem::create_directory(dir);
  std::string shown = on_a_terminal(home, dir, std::string(NODUS_BIN) + " report 1");
  EXPECT_EQ(shown.find("<html"), std::string::npos) << shown;
  std::string path = dir + "/nodus-report-1.html";
  EXPECT_NE(shown.find(path), std::string::npos) << shown;
  EXPECT_NE(read_file(path).find("<html"), std::string::npos);
  // Never over an existing file; piped, it is still stdout.
  std::string again = on_a_terminal(home, dir, std::string(NODUS_BIN) + " report 1");
  EXPECT_NE(again.find(dir + "/nodus-report-1-2.html"), std::string::npos) << again;
  EXPECT_NE(home.run({"report", "1"}).out.find("<html"), std::string::npos);
}

TEST(Cost, GroupsBySweepAndNameWithinARange) {
  NodusHome home;
  std::map<std::string, std::string> env{{"NODUS_LOCAL_USD_PER_HOUR", "36"}};
  ASSERT_EQ(home.run({"run", "--name", "a", "--", "true"}, env).code, 0);
  ASSERT_EQ(home.run({"run", "--name", "a", "--", "true"}, env).code, 0);
  ASSERT_EQ(home.run({"sweep", "-p", "w=1,2,3", "--", "true"}, env).code, 0);
  auto by_name = nlohmann::json::parse(home.run({"cost", "--by", "name", "--format", "json"}).out);
  std::map<std::string, int> jobs;
  for (const auto& row : by_name["by_name"])
    jobs[row["name"].is_null() ? "" : row["name"].get<std::string>()] = row["jobs"];
  EXPECT_EQ(jobs["a"], 2) << by_name.dump();
  EXPECT_EQ(jobs["s1-1"], 1);
  auto by_sweep =
      nlohmann::json::parse(home.run({"cost", "--by", "sweep", "--format", "json"}).out);
  std::map<std::string, int> sweeps;
  for (const auto& row : by_sweep["by_sweep"])
    sweeps[row["sweep_id"].is_null() ? "-" : row["sweep_id"].get<std::string>()] = row["jobs"];
  EXPECT_EQ(sweeps["s1"], 3) << by_sweep.dump();
  EXPECT_EQ(sweeps["-"], 2);
  // --until before everything, --since after everything: nothing; a date works too.
  auto none = nlohmann::json::parse(home.run({"cost", "--until", "1h", "--format", "json"}).out);
  EXPECT_EQ(none["total"]["jobs"], 0) << none.dump();
  auto all = nlohmann::json::parse(
      home.run({"cost", "--since", "2000-01-01", "--until", "2999-01-01", "--format", "json"}).out);
  EXPECT_EQ(all["total"]["jobs"], 5) << all.dump();
  auto bad = home.run({"cost", "--until", "2026-13-45"});
  EXPECT_EQ(bad.code, 125);
  EXPECT_NE(bad.err.find("'2026-13-45'"), std::string::npos) << bad.err;
  EXPECT_EQ(home.run({"cost", "--since", "1h", "--until", "2h"}).code, 125);
}

// cost writes its json object as it goes (the groupings' rows one at a time, then the range and
// the total): the bytes nlohmann's own dump of that object prints, rows or none, one grouping or
// two.
TEST(Cost, JsonIsWhatDumpingTheObjectPrints) {
  NodusHome home;
  std::map<std::string, std::string> env{{"NODUS_LOCAL_USD_PER_HOUR", "36"}};
  ASSERT_EQ(home.run({"run", "--name", "a", "--", "true"}, env).code, 0);
  ASSERT_EQ(home.run({"sweep", "-p", "w=1,2", "--", "true"}, env).code, 0);
  for (std::vector<std::string> by : {std::vector<std::string>{},
                                      {"--by", "day"},
                                      {"--by", "gpu"},
                                      {"--by", "sweep"},
                                      {"--by", "name"}}) {
    for (std::vector<std::string> range : {std::vector<std::string>{}, {"--until", "1h"}}) {
      std::vector<std::string> args = {"cost", "--format", "json"};
      args.insert(args.end(), by.begin(), by.end());
      args.insert(args.end(), range.begin(), range.end());
      auto r = home.run(args);
      ASSERT_EQ(r.code, 0) << r.err;
      auto parsed = nlohmann::json::parse(r.out);
      EXPECT_EQ(r.out, parsed.dump(2) + "\n");
      EXPECT_EQ(parsed["total"]["jobs"], range.empty() ? 3 : 0) << r.out;
    }
  }
}

TEST(Completion, BashCompletesRunMaToMaxCost) {
  std::string script = "source <('" + std::string(NODUS_BIN) +
                       "' completion bash) && COMP_WORDS=(nodus run --ma) && COMP_CWORD=2 && "
                       "_nodus && echo \"${COMPREPLY[*]}\"";
  NodusHome home;
  write_file(home.file("complete.sh"), script + "\n");
  FILE* p = popen(("bash '" + home.file("complete.sh") + "' 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_EQ(out, "--max-cost\n");
}

TEST(Completion, EveryShellScriptNamesEveryCommandAndRunOption) {
  NodusHome home;
  for (const char* shell : {"bash", "zsh", "fish"}) {
    auto r = home.run({"completion", shell});
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* word : {"run", "sweep", "cost", "max-cost", "rate-per", "prices-only"})
      EXPECT_NE(r.out.find(word), std::string::npos) << shell << ": " << word;
  }
  EXPECT_EQ(home.run({"completion", "tcsh"}).code, 125);
}

TEST(ManPage, IsGeneratedWithEveryCommandsOptions) {
  std::string man = std::filesystem::path(NODUS_BIN).parent_path().string() + "/nodus.1";
  std::string text = read_file(man);
  ASSERT_FALSE(text.empty()) << man << " missing: help2man (scripts/install-deps.sh) builds it";
  EXPECT_NE(text.find(".TH NODUS"), std::string::npos);
  for (const char* word : {"max\\-cost", "completion", "prices\\-only"})
    EXPECT_NE(text.find(word), std::string::npos) << word;
}

}  // namespace
}  // namespace nodus::testing
