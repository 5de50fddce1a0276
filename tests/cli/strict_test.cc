// The other cases, each against the real binary: secrets never reach the store, the
// files nodus writes or its output; text from users is valid UTF-8 in the store and escaped on
// the way out; planted files and folders are refused; parameter values keep their text; ids and
// names never collide; help shows the real usage.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cli/fixtures.h"
#include "core/error.h"
#include "store/store.h"

namespace nodus::testing {
namespace {

namespace fs = std::filesystem;

// Every byte nodus keeps under NODUS_HOME (store, WAL, logs, metrics, cache), except `skip`.
std::string all_bytes(const NodusHome& home, const std::set<std::string>& skip = {}) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(home.path())) {
    if (!e.is_regular_file() || skip.count(e.path().filename().string())) continue;
    out += read_file(e.path().string());
  }
  return out;
}

const std::vector<std::pair<std::string, std::string>> kSecrets = {
    {"DATABASE_URL", "postgres://u:SECRETdburl1@h/db"},
    {"DB_PASS", "SECRETdbpass2"},
    {"HF_KEY", "SECREThfkey3"},
    {"OPENAI_KEY", "SECRETopenai4"},
    {"PASSPHRASE", "SECRETphrase5"},
    {"PRIVATE", "SECRETprivate6"},
    {"GH_PAT", "SECRETghpat7"},
    {"SESSION", "SECRETsession8"},
    {"MY_CREDENTIAL", "SECRETcred9"},
    {"X_AUTH", "SECRETauth10"},
    {"COOKIE", "SECRETcookie11"},
    {"HF_TOKEN", "SECRETtoken12"},
    {"MIRROR", "https://SECRETuserinfo13@example.com/x?token=SECRETquery14"},
};

std::vector<std::string> env_flags() {
  std::vector<std::string> out;
  for (const auto& [k, v] : kSecrets) {
    out.push_back("--env");
    out.push_back(k + "=" + v);
  }
  return out;
}

void expect_no_secret(const std::string& where, const std::string& text) {
  for (const auto& [k, v] : kSecrets) {
    std::string needle = v.find("SECRET") != std::string::npos ? v.substr(v.find("SECRET"), 12) : v;
    EXPECT_EQ(text.find(needle), std::string::npos) << k << "'s secret in " << where;
  }
  EXPECT_EQ(text.find("SECRET"), std::string::npos) << "a secret in " << where;
}

TEST(Secrets, NeverStoredNorPrintedButTheJobSeesThem) {
  NodusHome home;
  std::string seen = home.file("seen");
  std::vector<std::string> args = {"run"};
  for (const auto& f : env_flags()) args.push_back(f);
  args.insert(args.end(), {"--", "sh", "-c", "env > " + seen});
  auto r = home.run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string job_env = read_file(seen);
  for (const auto& [k, v] : kSecrets)
    EXPECT_NE(job_env.find(k + "=" + v), std::string::npos) << "the job must see " << k;

  std::string printed = r.out + r.err;
  for (auto cmd : std::vector<std::vector<std::string>>{{"show", "1", "--format", "json"},
                                                        {"show", "1"},
                                                        {"show", "1", "--format", "md"},
                                                        {"show", "1", "--format", "csv"},
                                                        {"ps", "-a", "--format", "json"},
                                                        {"ps", "-a"},
                                                        {"logs", "1"}}) {
    auto out = home.run(cmd);
    EXPECT_EQ(out.code, 0) << out.err;
    printed += out.out + out.err;
  }
  expect_no_secret("nodus's stdout/stderr", printed);
  expect_no_secret("the files under NODUS_HOME", all_bytes(home, {"seen"}));
  auto j = show_json(home, "1");
  EXPECT_EQ(j["env"]["DATABASE_URL"], "postgres://u:<redacted>@h/db");
  EXPECT_EQ(j["env"]["DB_PASS"], "<redacted>");
  EXPECT_EQ(j["env"]["MIRROR"], "https://<redacted>@example.com/x?token=<redacted>");
}

// Issue 28: NODUS_PRICES is no secret setting, but an https URL in it may carry credentials.
TEST(Secrets, ConfigRedactsThePricesUrlLikeTheSlurmUrl) {
  NodusHome home;
  std::map<std::string, std::string> env = {
      {"NODUS_PRICES", "https://me:SECRETprices1@prices.example/p.json?token=SECRETprices2"},
      {"NODUS_SLURM_URL", "https://me:SECRETslurm3@slurm.example:6820"}};
  std::string printed;
  for (auto format : {"table", "json", "csv", "md"}) {
    auto r = home.run({"config", "--format", format}, env);
    ASSERT_EQ(r.code, 0) << r.err;
    printed += r.out + r.err;
  }
  EXPECT_EQ(printed.find("SECRET"), std::string::npos) << printed;
  auto j = nlohmann::json::parse(home.run({"config", "--format", "json"}, env).out);
  for (const auto& row : j) {
    if (row["key"] == "prices") {
      EXPECT_EQ(row["value"], "https://me:<redacted>@prices.example/p.json?token=<redacted>");
    }
  }
}

// Issue 28: NODUS_CGROUP=banana was read as "not off", so on. Only the documented values pass.
TEST(ConfigChoices, UndocumentedValuesAreRefusedBeforeAnythingRuns) {
  NodusHome home;
  std::string ran = home.file("ran");
  for (const char* var : {"NODUS_CGROUP", "NODUS_CPUSETS"}) {
    for (const char* value : {"banana", "OFF", "off ", "1"}) {
      for (std::vector<std::string> cmd :
           {std::vector<std::string>{"run"}, std::vector<std::string>{"sweep", "-p", "i=1,2"}}) {
        cmd.insert(cmd.end(), {"--", "sh", "-c", "touch " + ran});
        auto r = home.run(cmd, {{var, value}});
        EXPECT_EQ(r.code, 125) << var << "=" << value << " " << r.err;
        EXPECT_EQ(r.err, "nodus: " + std::string(var) + ": invalid value '" + value +
                             "': expected auto or off\n");
      }
    }
  }
  EXPECT_FALSE(fs::exists(ran)) << "a job ran";
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 0u);
  EXPECT_EQ(home.run({"config"}, {{"NODUS_CGROUP", "banana"}}).code, 0) << "config shows it";
  for (const char* value : {"auto", "off"}) {
    auto r = home.run({"run", "--", "true"}, {{"NODUS_CGROUP", value}, {"NODUS_CPUSETS", value}});
    EXPECT_EQ(r.code, 0) << value << " " << r.err;
  }
}

TEST(Secrets, DetachedRunsAndSweepsKeepThemOutOfTheStoreToo) {
  NodusHome home;
  std::string seen = home.file("seen");
  std::vector<std::string> det = {"run", "-d"};
  for (const auto& f : env_flags()) det.push_back(f);
  det.insert(det.end(), {"--", "sh", "-c", "env > " + seen});
  auto d = home.run(det);
  ASSERT_EQ(d.code, 0) << d.err;
  std::vector<std::string> sw = {"sweep", "-p", "i=1,2"};
  for (const auto& f : env_flags()) sw.push_back(f);
  sw.insert(sw.end(), {"--", "sh", "-c", "env > " + home.file("cell{i}")});
  auto s = home.run(sw);
  ASSERT_EQ(s.code, 0) << s.err;
  for (int i = 0; i < 100 && !fs::exists(seen); ++i) usleep(50'000);
  usleep(300'000);
  EXPECT_NE(read_file(home.file("cell1")).find("DB_PASS=SECRETdbpass2"), std::string::npos);
  auto show = home.run({"show", "s1", "--format", "json"});
  expect_no_secret("output", d.out + d.err + s.out + s.err + show.out + show.err);
  expect_no_secret("the files under NODUS_HOME", all_bytes(home, {"seen", "cell1", "cell2"}));
}

TEST(Text, OldRowsWithInvalidUtf8NeverBreakJsonListings) {
  NodusHome home;
  {
    auto store = store::Store::open(home.file("nodus.db"));
    JobRecord j;
    j.name = "bad\xff\xfe name";
    j.argv = {"echo", "x"};
    j.state = JobState::kCompleted;
    j.created_at = unix_now();
    store->insert_job(j);
  }
  for (auto cmd : std::vector<std::vector<std::string>>{{"ps", "-a", "--format", "json"},
                                                        {"show", "1", "--format", "json"},
                                                        {"ps", "-a", "--format", "csv"},
                                                        {"ps", "-a"}}) {
    auto r = home.run(cmd);
    EXPECT_EQ(r.code, 0) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.out.find("bad\xEF\xBF\xBD\xEF\xBF\xBD name"), std::string::npos) << r.out;
    if (cmd.back() == "json") {
      EXPECT_NO_THROW(nlohmann::json::parse(r.out)) << r.out;
    }
  }
}

TEST(Text, ControlCharactersAreEscapedInEveryTable) {
  NodusHome home;
  {
    auto store = store::Store::open(home.file("nodus.db"));
    JobRecord j;
    j.name = "evil\n1    fake-row\x1b]0;title\x07\x1b[2J";
    j.argv = {"echo", "\x1b[31mred\r"};
    j.state = JobState::kCompleted;
    j.created_at = unix_now();
    store->insert_job(j);
  }
  auto ps = home.run({"ps", "-a"});
  ASSERT_EQ(ps.code, 0) << ps.err;
  EXPECT_EQ(ps.out.find('\x1b'), std::string::npos) << ps.out;
  EXPECT_EQ(ps.out.find('\r'), std::string::npos) << ps.out;
  EXPECT_EQ(std::count(ps.out.begin(), ps.out.end(), '\n'), 2) << "header + one row:\n" << ps.out;
  EXPECT_NE(ps.out.find("evil\\n1"), std::string::npos) << ps.out;
  auto show = home.run({"show", "1"});
  EXPECT_EQ(show.out.find('\x1b'), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("\\x1b[31mred\\r"), std::string::npos) << show.out;
  auto md = home.run({"ps", "-a", "--format", "md"});
  EXPECT_EQ(md.out.find('\x1b'), std::string::npos) << md.out;
  // The command as typed is shown escaped, never run through a terminal.
  auto run = home.run({"run", "--", "true", "\x1b[2J"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(home.run({"ps", "-a"}).out.find('\x1b'), std::string::npos);
}

TEST(Text, MarkdownEscapesHtmlFromParameterValues) {
  NodusHome home;
  auto r = home.run({"sweep", "-p", "v=<img src=x onerror=alert(1)>,<b>x</b>", "--", "true"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto md = home.run({"show", "s1", "--format", "md"});
  ASSERT_EQ(md.code, 0) << md.err;
  EXPECT_EQ(md.out.find("<img"), std::string::npos) << md.out;
  EXPECT_EQ(md.out.find("<b>"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("&lt;img"), std::string::npos) << md.out;
  auto dry = home.run({"sweep", "--dry-run", "--format", "md", "-p", "v=<script>", "--", "true"});
  EXPECT_EQ(dry.out.find("<script>"), std::string::npos) << dry.out;
}

TEST(Files, ASymlinkPlantedAtTheLogIsNotWrittenThrough) {
  NodusHome home;
  ASSERT_EQ(home.run({"ps"}).code, 0);  // creates the store and its folders
  std::string target = home.file("target");
  write_file(target, "precious\n");
  ASSERT_EQ(::symlink(target.c_str(), home.file("logs/1.log").c_str()), 0);
  auto r = home.run({"run", "--", "echo", "INJECTED"});
  EXPECT_EQ(read_file(target), "precious\n");
  EXPECT_EQ(r.code, 125) << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Files, AStaleLogFromAnOlderStoreIsReplacedNotAppendedTo) {
  NodusHome home;
  ASSERT_EQ(home.run({"ps"}).code, 0);
  write_file(home.file("logs/1.log"), "old output\n");
  ASSERT_EQ(home.run({"run", "--", "echo", "new"}).code, 0);
  EXPECT_EQ(read_file(home.file("logs/1.log")), "new\n");
}

TEST(Files, FoldersAreCreated0700AndUnsafeOnesRefused) {
  NodusHome home;  // NodusHome always sets NODUS_HOME to its own (mkdtemp, 0700) folder
  std::string nested = home.path();
  auto r = home.run({"run", "--", "true"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* sub : {"", "/logs", "/metrics"}) {
    struct stat st {};
    ASSERT_EQ(::stat((nested + sub).c_str(), &st), 0) << sub;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << sub;
  }
  // A pre-existing 0755 logs folder is tightened; one others can write is refused.
  ::chmod((nested + "/logs").c_str(), 0755);
  EXPECT_EQ(home.run({"run", "--", "true"}).code, 0);
  struct stat st {};
  ::stat((nested + "/logs").c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ::chmod((nested + "/logs").c_str(), 0777);
  auto refused = home.run({"run", "--", "touch", home.file("marker")});
  EXPECT_EQ(refused.code, 125);
  EXPECT_NE(refused.err.find("others can write"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(home.file("marker")));
  ::chmod((nested + "/logs").c_str(), 0700);
  if (::geteuid() == 0) {  // only root can give a folder away
    ASSERT_EQ(::chown((nested + "/metrics").c_str(), 12345, 12345), 0);
    auto other = home.run({"run", "--", "touch", home.file("marker")});
    EXPECT_EQ(other.code, 125);
    EXPECT_NE(other.err.find("belongs to uid 12345"), std::string::npos) << other.err;
    EXPECT_FALSE(fs::exists(home.file("marker")));
  }
}

TEST(Params, KeepTheTextTypedInEveryOutput) {
  NodusHome home;
  auto r = home.run({"sweep", "-p", "lr=1e5,1.50", "-p", "n=4", "--", "true"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto json = home.run({"show", "s1", "--format", "json"});
  EXPECT_NE(json.out.find("\"1e5\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"1.50\""), std::string::npos) << json.out;
  EXPECT_EQ(json.out.find("100000"), std::string::npos) << json.out;
  auto csv = home.run({"show", "s1", "--format", "csv"});
  EXPECT_NE(csv.out.find("1e5"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("1.50"), std::string::npos) << csv.out;
  auto table = home.run({"show", "s1"});
  EXPECT_NE(table.out.find("1.50"), std::string::npos) << table.out;
  auto dry = home.run({"sweep", "--dry-run", "--format", "json", "-p", "lr=1e5", "--", "true"});
  EXPECT_NE(dry.out.find("\"1e5\""), std::string::npos) << dry.out;
}

TEST(Ids, EveryCommandResolvesIdsAndNamesTheSameWay) {
  NodusHome home;
  EXPECT_EQ(home.run({"run", "--name", "s1", "--", "true"}).code, 125);
  EXPECT_EQ(home.run({"run", "--name", "7", "--", "true"}).code, 125);
  ASSERT_EQ(home.run({"sweep", "-p", "i=1", "--", "true"}).code, 0);
  ASSERT_EQ(home.run({"run", "--name", "s1x", "--", "true"}).code, 0);
  auto show = home.run({"show", "s1", "--format", "json"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_TRUE(nlohmann::json::parse(show.out).contains("cells")) << "s1 is the sweep";
  auto stop = home.run({"stop", "s1"});  // the sweep, which has ended
  EXPECT_EQ(stop.code, 0);
  EXPECT_NE(stop.err.find("sweep s1 already ended"), std::string::npos) << stop.err;
  EXPECT_EQ(home.run({"logs", "s1x"}).code, 0);
  EXPECT_EQ(show_json(home, "s1x")["name"], "s1x");
}

TEST(Parse, OptionsAfterTheCommandWordBelongToTheJob) {
  NodusHome home;
  std::string out = home.file("args");
  // (A limit there is refused instead: the job would run without it. bad_input_test.cc.)
  auto r = home.run({"run", "--timeout", "5s", "sh", "-c", "echo \"$@\" > " + out, "x", "--lr", "3",
                     "[1,2]", "--name"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(out), "--lr 3 [1,2] --name\n");
  auto after = home.run({"run", "--", "sh", "-c", "echo \"$@\" > " + out, "x", "--", "-d"});
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_EQ(read_file(out), "-- -d\n");
}

TEST(Help, ShowsUsageWithCommandValueNamesAndExamples) {
  NodusHome home;
  auto run = home.run({"run", "--help"});
  EXPECT_EQ(run.code, 0);
  for (const char* want : {"Usage: nodus run [OPTIONS] -- CMD [ARGS...]", "USD", "DURATION",
                           "TYPE[:COUNT]", "PCT", "Examples:", "nodus run --gpu H100:2"})
    EXPECT_NE(run.out.find(want), std::string::npos) << want << " in\n" << run.out;
  auto sweep = home.run({"sweep", "--help"});
  for (const char* want : {"Usage: nodus sweep [OPTIONS] -- CMD [ARGS...]", "NAME=VALUES", "USD",
                           "Examples:", "--dry-run"})
    EXPECT_NE(sweep.out.find(want), std::string::npos) << want << " in\n" << sweep.out;
  EXPECT_EQ(sweep.out.find(" TEXT"), std::string::npos) << sweep.out;
  for (const char* sub : {"ps", "show", "logs", "stop", "sweeps", "cost", "prices", "estimate",
                          "report", "config", "gpus"}) {
    auto h = home.run({sub, "--help"});
    EXPECT_EQ(h.code, 0) << sub;
    EXPECT_NE(h.out.find(std::string("Usage: nodus ") + sub), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("Examples:"), std::string::npos) << h.out;
  }
}

// The long options of a README flag table (between `### <heading>` and the next heading).
std::set<std::string> readme_flags(const std::string& heading) {
  std::string text = read_file(std::string(NODUS_SOURCE_DIR) + "/README.md");
  size_t start = text.find("### " + heading + "\n");
  size_t end = text.find("\n### ", start + 1);
  std::string section = text.substr(start, end - start);
  std::set<std::string> out;
  std::istringstream lines(section);
  static const std::regex flag("--[a-z][a-z-]*");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `-", 0) != 0) continue;
    std::string cell = line.substr(0, line.find(" | ", 2));
    for (std::sregex_iterator it(cell.begin(), cell.end(), flag), e; it != e; ++it)
      out.insert(it->str());
  }
  return out;
}

std::set<std::string> help_flags(const NodusHome& home, const std::string& sub) {
  std::string text = home.run({sub, "--help"}).out;
  std::set<std::string> out;
  std::istringstream lines(text);
  static const std::regex flag("^\\s+(?:-[a-z],)?(--[a-z][a-z-]*)");
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, m, flag) && m[1] != "--help") out.insert(m[1]);
  return out;
}

// Issue 29, point 4: the README's exit status table is the code's (core/error.h), and
// `--help-all` ends with it.
TEST(Help, ReadmeExitStatusTableIsTheCodesAndHelpAllPrintsIt) {
  std::string text = read_file(std::string(NODUS_SOURCE_DIR) + "/README.md");
  size_t start = text.find("### Exit status\n");
  ASSERT_NE(start, std::string::npos);
  const std::string head = "| code | when |\n| --- | --- |\n";
  size_t header = text.find(head, start);
  ASSERT_NE(header, std::string::npos);
  std::istringstream lines(text.substr(header + head.size()));
  std::vector<std::pair<std::string, std::string>> readme;
  for (std::string line; std::getline(lines, line) && line.rfind("| ", 0) == 0;) {
    auto bar = line.find(" | ");
    readme.emplace_back(line.substr(2, bar - 2), line.substr(bar + 3, line.size() - bar - 5));
  }
  std::vector<std::pair<std::string, std::string>> code;
  for (const auto& row : exit_code::table()) code.emplace_back(row.code, row.when);
  EXPECT_EQ(readme, code);

  NodusHome home;
  auto all = home.run({"--help-all"});
  ASSERT_EQ(all.code, 0);
  EXPECT_NE(all.out.find("Exit status:"), std::string::npos);
  EXPECT_NE(all.out.find("123             killed because its enforcers were attacked"),
            std::string::npos)
      << all.out;
  EXPECT_NE(all.out.find("stopped by --max-cost (or a sweep's --budget)"), std::string::npos);
}

TEST(Help, BareNodusPrintsUsageAndExamples) {
  NodusHome home;
  auto r = home.run({});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Usage: nodus COMMAND", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("Examples:\n  nodus run --gpu H100"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(Help, ReadmeFlagTablesMatchHelp) {
  NodusHome home;
  EXPECT_EQ(readme_flags("nodus run"), help_flags(home, "run"));
  EXPECT_EQ(readme_flags("nodus sweep"), help_flags(home, "sweep"));
  EXPECT_FALSE(readme_flags("nodus sweep").empty());
}

}  // namespace
}  // namespace nodus::testing
