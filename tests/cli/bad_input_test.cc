// The bad-input suite: every invocation a user could mistype, each with its exit code (125), the
// one-line message it must print, and the proof that nothing ran (the command would have created
// a marker file; it does not exist) and nothing was stored (no store file, or no rows in it).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/fixtures.h"
#include "core/job.h"

namespace nodus::testing {
namespace {

struct Case {
  std::vector<std::string> args;      // @M: the marker path, @H: the home, @D: a data file (below)
  std::vector<std::string> mentions;  // each must appear in the one-line error
};

// Files some cases point --prices at.
void write_inputs(const NodusHome& home) {
  write_file(home.file("rate-huge.json"),
             R"({"gpus": [{"type": "H100-SXM", "aliases": ["H100"], "usd_per_gpu_hour": 1e308,
  "source": "t", "checked": "2026-11-29", "device_names": []}]})");
  write_file(home.file("rate-1001.json"),
             R"({"gpus": [{"type": "H100-SXM", "aliases": ["H100"], "usd_per_gpu_hour": 1001,
  "source": "t", "checked": "2026-11-29", "device_names": []}]})");
  write_file(home.file("rate-negative.json"),
             R"({"gpus": [{"type": "H100-SXM", "aliases": ["H100"], "usd_per_gpu_hour": -1,
  "source": "t", "checked": "2026-11-29", "device_names": []}]})");
  write_file(home.file("big.json"), std::string(5 << 20, ' '));
  ::mkfifo(home.file("fifo.json").c_str(), 0600);
  std::filesystem::create_directory(home.file("folder.json"));
}

std::string substitute(std::string arg, const NodusHome& home) {
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = arg.find(from); at != std::string::npos; at = arg.find(from, at + to.size()))
      arg.replace(at, from.size(), to);
  };
  replace("@M", home.file("marker"));
  replace("@H", home.path());
  return arg;
}

size_t rows(const NodusHome& home, const std::string& command) {
  auto r = command == "ps" ? home.run({"ps", "-a", "--format", "json"})
                           : home.run({command, "--format", "json"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_array() ? j.size() : 999;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, Exit125OneLineNothingRunNothingStored) {
  NodusHome home;
  write_inputs(home);
  std::vector<std::string> args;
  for (const auto& a : GetParam().args) args.push_back(substitute(a, home));
  auto r = home.run(args, {{"NODUS_LOCAL_GPUS", "H100:2"}});
  EXPECT_EQ(r.code, 125) << r.err;
  for (const auto& m : GetParam().mentions)
    EXPECT_NE(r.err.find(m), std::string::npos) << "want '" << m << "' in: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("nodus: ", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(std::filesystem::exists(home.file("marker"))) << "the command ran";
  if (std::filesystem::exists(home.file("nodus.db"))) {
    EXPECT_EQ(rows(home, "ps"), 0u) << "a rejected command stored a job";
    EXPECT_EQ(rows(home, "sweeps"), 0u) << "a rejected command stored a sweep";
  }
}

const std::vector<std::string> kTouch = {"--", "touch", "@M"};
std::vector<std::string> run(std::vector<std::string> flags) {
  std::vector<std::string> a = {"run"};
  a.insert(a.end(), flags.begin(), flags.end());
  a.insert(a.end(), kTouch.begin(), kTouch.end());
  return a;
}
std::vector<std::string> sweep(std::vector<std::string> flags) {
  std::vector<std::string> a = {"sweep"};
  a.insert(a.end(), flags.begin(), flags.end());
  a.insert(a.end(), kTouch.begin(), kTouch.end());
  return a;
}

// Mistyped and misplaced options: the issue's cases first.
INSTANTIATE_TEST_SUITE_P(
    UnknownOptions, BadInput,
    ::testing::Values(
        Case{run({"--gpu", "H100", "--maxcost=0.0001"}),
             {"unknown option '--maxcost=0.0001'", "did you mean --max-cost?"}},
        Case{run({"--gpu", "H100", "--max-cots", "1"}), {"'--max-cots'", "--max-cost?"}},
        Case{run({"--timout", "1s"}), {"'--timout'", "did you mean --timeout?"}},
        Case{run({"--gpus", "H100:2"}), {"'--gpus'", "did you mean --gpu?"}},
        Case{run({"--budget", "1"}), {"'--budget'", "option of nodus sweep"}},
        Case{sweep({"--budgte", "0.001", "-p", "a=1"}), {"'--budgte'", "did you mean --budget?"}},
        Case{sweep({"-z", "-p", "a=1"}), {"unknown option '-z'"}},
        Case{run({"--MAX-COST", "1"}), {"did you mean --max-cost?"}},
        Case{run({"--nme", "x"}), {"did you mean --name?"}},
        Case{run({"-x"}), {"unknown option '-x'"}},
        Case{run({"--detach=maybe"}), {"run:", "detach"}},
        Case{{"run", "--maxcost", "1", "touch", "@M"}, {"'--maxcost'", "--max-cost?"}},
        Case{{"run", "--gpu", "H100", "-q", "touch", "@M"}, {"unknown option '-q'"}},
        Case{{"run", "--wait", "--", "touch", "@M"}, {"'--wait'", "--no-wait?"}},
        // A limit after the command would go to the job: it would run without it.
        Case{{"run", "touch", "@M", "--max-cost", "1"},
             {"run:", "'--max-cost' comes after the command", "put -- before the command"}},
        Case{{"run", "--gpu", "H100", "touch", "@M", "--timeout=5s"},
             {"'--timeout' comes after the command"}},
        Case{{"sweep", "-p", "a=1", "touch", "@M", "--budget", "1"},
             {"sweep:", "'--budget' comes after the command"}},
        Case{{"sweep", "-p", "a=1", "--paralel", "2", "--", "touch", "@M"},
             {"did you mean --parallel?"}},
        Case{{"sweep", "-p", "a=1", "--dryrun", "--", "touch", "@M"}, {"did you mean --dry-run?"}},
        Case{{"rnu", "--", "touch", "@M"}, {"unknown command 'rnu'", "did you mean run?"}},
        Case{{"swep", "-p", "a=1", "--", "touch", "@M"}, {"did you mean sweep?"}},
        Case{{"pss"}, {"unknown command 'pss'", "did you mean ps?"}},
        Case{{"launch", "--", "touch", "@M"}, {"unknown command 'launch'"}},
        Case{{"--gpu", "H100", "run", "--", "touch", "@M"}, {"'--gpu'", "after the command name"}},
        Case{{"ps", "-x"}, {"ps:", "unknown option '-x'"}},
        Case{{"ps", "extra"}, {"unexpected argument 'extra'"}},
        Case{{"ps", "--", "touch", "@M"}, {"takes no command"}},
        Case{{"show"}, {"show:", "required"}}, Case{{"stop"}, {"stop:", "required"}},
        Case{{"logs", "1", "2"}, {"unexpected argument '2'"}},
        Case{{"cost", "--since7d"}, {"unknown option"}}));

// An empty value never means "no cap" or "default".
INSTANTIATE_TEST_SUITE_P(
    EmptyValues, BadInput,
    ::testing::Values(Case{run({"--gpu", "H100", "--max-cost", ""}), {"--max-cost"}},
                      Case{run({"--timeout", ""}), {"--timeout"}},
                      Case{sweep({"--gpu", "H100", "--budget", "", "-p", "a=1"}), {"--budget"}},
                      Case{run({"--gpu", ""}), {"--gpu"}}, Case{run({"--grace", ""}), {"--grace"}},
                      Case{run({"--name", ""}), {"--name"}}, Case{run({"--env", ""}), {"--env"}},
                      Case{run({"--workdir", ""}), {"--workdir"}},
                      Case{run({"--image", ""}), {"--image"}},
                      Case{run({"--backend", ""}), {"--backend"}},
                      Case{run({"--prices", ""}), {"--prices"}},
                      Case{run({"--sample-interval", ""}), {"--sample-interval"}},
                      Case{run({"--min-util", ""}), {"--min-util"}},
                      Case{run({"--util-window", ""}), {"--util-window"}},
                      Case{run({"--metric-regex", ""}), {"--metric-regex"}},
                      Case{run({"--throughput", ""}), {"--throughput"}},
                      Case{run({"--loader", ""}), {"--loader", "empty value"}},
                      Case{sweep({"--param", ""}), {"--param"}},
                      Case{sweep({"-p", "a=1", "--resume", ""}), {"--resume"}},
                      Case{{"ps", "--format", ""}, {"--format"}}, Case{{"show", ""}, {"show:"}},
                      Case{{"cost", "--since", ""}, {"--since"}}, Case{{"stop", ""}, {"stop:"}}));

// Values of the right option but the wrong form or range.
INSTANTIATE_TEST_SUITE_P(
    BadValues, BadInput,
    ::testing::Values(
        Case{run({"--gpu", "H100", "--max-cost", "0"}), {"--max-cost", "'0'"}},
        Case{run({"--gpu", "H100", "--max-cost", "1e308"}), {"'1e308'"}},
        Case{run({"--gpu", "H100", "--max-cost", "5x"}), {"'5x'"}},
        Case{run({"--gpu", "H100", "--max-cost", "0x10"}), {"'0x10'"}},
        Case{run({"--gpu", "H100", "--max-cost", "1\n2"}), {"'1\\n2'"}},
        Case{run({"--gpu", "H100", "--max-cost", "\x1b[2J"}), {"'\\x1b[2J'"}},
        Case{run({"--timeout", "1s\r"}), {"'1s\\r'"}},
        Case{run({"--timeout", "0"}), {"--timeout", "'0'"}},
        Case{run({"--timeout", "1h30"}), {"'1h30'"}}, Case{run({"--timeout", "400d"}), {"'400d'"}},
        Case{run({"--grace", "-1s"}), {"--grace"}}, Case{run({"--gpu", "H100:0"}), {"'H100:0'"}},
        Case{run({"--gpu", "H100:65"}), {"'H100:65'"}},
        Case{run({"--gpu", "H1000"}), {"'H1000'", "did you mean H100 (H100-SXM)?"}},
        Case{run({"--gpu", "a1000"}), {"'a1000'", "known types"}},
        Case{run({"--gpu", "H100:1:2"}), {"'H100:1:2'"}},
        Case{run({"--gpu", "H 100"}), {"'H 100'"}},
        Case{run({"--gpu", "H100", "--min-util", "101"}), {"'101'"}},
        // It watches GPUs: a job without any would run on without the stop it asked for.
        Case{run({"--min-util", "50"}), {"--min-util 50", "this job asks for none"}},
        Case{run({"--gpu", "H100", "--min-util", "-1"}), {"--min-util"}},
        Case{run({"--sample-interval", "10ms"}), {"at least 50ms"}},
        Case{run({"--backend", "k8s"}), {"'k8s'", "local or slurm"}},
        Case{run({"--backend", "slurm", "--nodes", "0"}), {"--nodes", "'0'", "from 1 to 1024"}},
        Case{run({"--backend", "slurm", "--nodes", "two"}), {"'two'", "whole number of nodes"}},
        Case{run({"--backend", "slurm", "--nodes=-2"}), {"'-2'", "from 1 to 1024"}},
        Case{run({"--backend", "slurm", "--nodes", "1025"}), {"'1025'", "from 1 to 1024"}},
        Case{run({"--backend", "local", "--nodes", "2"}),
             {"--nodes 2", "Slurm only (--backend slurm)", "not --backend local"}},
        Case{sweep({"--nodes", "2", "-p", "a=1"}), {"--nodes 2", "Slurm only"}},
        Case{run({"--backend", "slurm", "--image", "alpine"}),
             {"--image alpine", "not declared to run jobs in containers",
              "NODUS_SLURM_CONTAINERS=oci"}},
        Case{sweep({"--backend", "slurm", "--image", "alpine", "-p", "a=1"}),
             {"--image alpine", "NODUS_SLURM_CONTAINERS=oci"}},
        Case{run({"--env", "NOEQUALS"}), {"'NOEQUALS'"}},
        Case{run({"--env", "A-B=1"}), {"'A-B=1'"}}, Case{run({"--name", "42"}), {"'42'", "id"}},
        Case{run({"--name", "s7"}), {"'s7'", "id"}},
        Case{run({"--name", "s3:2"}), {"'s3:2'", "letters, digits"}},
        Case{run({"--name=-x"}), {"'-x'", "starting with a letter or digit"}},
        Case{run({"--name", "evil\u202etxt"}), {"--name", "letters, digits"}},
        Case{run({"--name", "two words"}), {"'two words'"}},
        Case{run({"--name", "../up"}), {"'../up'"}},
        Case{run({"--name", "bad\xff"}), {"not valid UTF-8"}},
        Case{run({"--name", "a\nb"}), {"control character", "a\\nb"}},
        Case{run({"--name", "\x1b[31mred"}), {"control character", "\\x1b"}},
        Case{run({"--metric-regex", "loss=(\xff)"}), {"not valid UTF-8"}},
        Case{sweep({"-p", "p=ok,bad\xff"}), {"--param", "not valid UTF-8"}},
        Case{sweep({"-p", "p=a\x1b[2J"}), {"--param", "control character"}},
        Case{sweep({"--name", "s1", "-p", "a=1"}), {"'s1'"}},
        Case{sweep({"-p", "a=1", "--parallel", "0"}), {"--parallel"}},
        Case{sweep({"-p", "a=1", "--parallel", "abc"}), {"--parallel"}},
        Case{sweep({"--gpu", "H100", "-p", "a=1", "--budget", "0"}), {"--budget", "'0'"}},
        // sweep --gpu H100:{g}: the placeholders against the grid, then each cell's value.
        Case{sweep({"--gpu", "H100:{x}", "-p", "g=1,2"}),
             {"unknown placeholder {x} in --gpu 'H100:{x}'", "params: g"}},
        Case{sweep({"--gpu", "H100:{g", "-p", "g=1"}), {"unclosed '{' in --gpu 'H100:{g'"}},
        Case{sweep({"--gpu", "H100:{g}", "-p", "g=1,abc"}),
             {"--gpu H100:{g} is 'H100:abc' for some cells: invalid value 'H100:abc'"}},
        Case{sweep({"--gpu", "{g}", "-p", "g=H100,none", "--budget", "5"}),
             {"--budget", "cells without GPUs are billed at no rate here"}},
        Case{sweep({"--gpu", "H100:{g}", "-p", "g=1,4"}),
             {"--gpu H100:{g} is 'H100:4' for some cells: more than this machine has"}},
        Case{run({"--gpu", "H100:{g}"}), {"--gpu", "'H100:{g}'"}},
        // A --gpu value is shown escaped: no terminal control and no invalid byte reaches the line.
        Case{run({"--gpu", "H100\x1b[2J"}), {"--gpu", "'H100\\x1b[2J'", "TYPE[:COUNT]"}},
        Case{run({"--gpu", "H100:\xff"}), {"--gpu", "'H100:\uFFFD'"}},
        Case{sweep({"--gpu", "H100:{g}\n", "-p", "g=1"}), {"'H100:1\\n'", "TYPE[:COUNT]"}},
        Case{sweep({"--gpu", "H100", "-p", "a=1", "--budget", "lots"}), {"'lots'"}},
        Case{sweep({}), {"--param"}}, Case{sweep({"-p", "=1,2"}), {"=1,2"}},
        Case{sweep({"-p", "a=1", "--format", "yaml"}), {"'yaml'"}},
        // Issue 28, case 5: an image is never an option of the engine; ranges need finite bounds.
        Case{run({"--image=--privileged"}), {"--image", "'--privileged'", "image reference"}},
        Case{run({"--image", "-v/:/host"}), {"--image"}},
        Case{run({"--image", "py thon"}), {"--image", "'py thon'"}},
        Case{sweep({"--image=--privileged", "-p", "a=1"}), {"--image"}},
        Case{sweep({"-p", "k=nan..1"}), {"--param 'k=nan..1'"}},
        Case{sweep({"-p", "k=inf..1"}), {"--param 'k=inf..1'"}},
        Case{sweep({"-p", "k=..5"}), {"--param 'k=..5'"}},
        Case{sweep({"-p", "k=1..inf:2"}), {"--param 'k=1..inf:2'"}},
        Case{run({"--log-limit", "10k"}), {"--log-limit", "'10k'", "at least 1.0 MiB"}},
        Case{sweep({"-p", "a=1", "--log-limit", "lots"}), {"--log-limit", "'lots'"}},
        Case{{"run", "--"}, {"no command"}}, Case{{"stop", "s1"}, {"unknown sweep 's1'"}},
        Case{{"logs", "s1"}, {"unknown sweep 's1'"}}, Case{{"show", "99"}, {"'99'"}},
        Case{{"ps", "--format", "yaml"}, {"'yaml'"}}, Case{{"ps", "-n", "-1"}, {"--last"}},
        Case{{"ps", "-n", "many"}, {"--last"}},
        Case{{"estimate", "--gpu", "H100", "--hours", "1", "--util", "150"}, {"'150'"}},
        Case{{"estimate", "--gpu", "H100", "--hours", "0", "--util", "40"}, {"--hours"}},
        Case{{"cost", "--by", "week"}, {"'week'", "day, gpu, sweep or name"}},
        Case{{"cost", "--since", "yesterday"}, {"'yesterday'"}},
        Case{{"report", "s1", "--format", "pdf"}, {"'pdf'"}}));

// Input files: only regular files under the size limit, with rates from $0 to $1000/GPU-hour.
INSTANTIATE_TEST_SUITE_P(
    InputFiles, BadInput,
    ::testing::Values(
        Case{run({"--gpu", "H100", "--prices", "/dev/zero"}), {"not a regular file"}},
        Case{run({"--gpu", "H100", "--prices", "@H/fifo.json"}), {"not a regular file"}},
        Case{run({"--gpu", "H100", "--prices", "@H/big.json"}), {"larger than"}},
        Case{run({"--gpu", "H100", "--prices", "@H/folder.json"}), {"folder"}},
        Case{run({"--gpu", "H100", "--prices", "@H/rate-huge.json"}), {"from 0 to 1000"}},
        Case{run({"--gpu", "H100", "--prices", "@H/rate-1001.json"}), {"from 0 to 1000", "1001"}},
        Case{{"prices", "--prices", "@H/rate-negative.json"}, {"from 0 to 1000"}},
        Case{{"prices", "--prices", "/dev/zero"}, {"not a regular file"}},
        Case{sweep({"--gpu", "H100", "-p", "a=1", "--prices", "@H/fifo.json"}),
             {"not a regular file"}},
        Case{run({"--gpu", "H100", "--prices", "@H/missing.json"}), {"missing.json"}}));

TEST(BadInputSuite, HasAtLeast80Invocations) {
  size_t n = 0;
  for (const auto* info = ::testing::UnitTest::GetInstance(); info;) {
    for (int i = 0; i < info->total_test_suite_count(); ++i) {
      const auto* suite = info->GetTestSuite(i);
      if (std::string(suite->name()).find("/BadInput") != std::string::npos)
        n += static_cast<size_t>(suite->total_test_count());
    }
    break;
  }
  EXPECT_GE(n, 80u);
}

// --loader (issue 33): a knob nodus does not set, a value the DataLoader would refuse, and a
// command whose DataLoader the hook cannot reach.
INSTANTIATE_TEST_SUITE_P(
    LoaderKnobs, BadInput,
    ::testing::Values(
        Case{run({"--loader", "num_workers=-1"}), {"--loader", "'num_workers=-1'", "0 or more"}},
        Case{run({"--loader", "threads=4"}), {"unknown knob 'threads'", "num_workers"}},
        Case{run({"--loader", "pin_memory=yes"}), {"'pin_memory=yes'", "true or false"}},
        Case{run({"--loader", "num_workers=2,num_workers=4"}), {"given twice"}},
        Case{run({"--loader", "num_workers"}), {"'num_workers'", "KNOB=VALUE"}},
        Case{sweep({"-p", "a=1", "--loader", "batch_size=0"}), {"'batch_size=0'", "1 or more"}},
        Case{run({"--loader", "num_workers=2"}), {"'touch' does not run Python"}},
        Case{{"run", "--loader", "num_workers=2", "--no-instrument", "--", "python3", "@M"},
             {"drop --no-instrument"}},
        Case{{"run", "--loader", "num_workers=2", "--", "python3", "-I", "@M"}, {"--loader:"}},
        Case{run({"--tf32"}), {"--tf32:", "'touch' does not run Python"}},
        Case{{"run", "--tf32", "--no-instrument", "--", "python3", "@M"},
             {"--tf32:", "drop --no-instrument"}}));

}  // namespace
}  // namespace nodus::testing

namespace nodus::testing {
namespace {

// Only nodus starts `__supervise`, with a ticket on its stdin: anything else there is one line
// naming what is wrong, exit 125, and nothing stored.
// The other side of strictness: every state a job can be in is one `ps --state` takes.
TEST(BadInputSuite, EveryJobStateIsAStatePsAccepts) {
  NodusHome home;
  for (int s = 0; s <= static_cast<int>(JobState::kTampered); ++s) {
    const std::string state(to_string(static_cast<JobState>(s)));
    auto r = home.run({"ps", "--state", state});
    EXPECT_EQ(r.code, 0) << state << ": " << r.err;
  }
}

TEST(BadInputSupervise, AnythingButATicketOnStdinIsOneLineAnd125) {
  NodusHome home;
  for (const char* text : {"{}", "not json", "", "{\"job_id\": \"one\"}"}) {
    write_file(home.file("ticket"), text);
    const std::string command = "NODUS_HOME='" + home.path() + "' '" + std::string(NODUS_BIN) +
                                "' __supervise <'" + home.file("ticket") + "' 2>'" +
                                home.file("err") + "'";
    int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << text;
    EXPECT_EQ(WEXITSTATUS(status), 125) << text;
    std::string err = read_file(home.file("err"));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("__supervise: stdin holds no ticket of nodus's"), std::string::npos) << err;
    EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
  }
  EXPECT_FALSE(std::filesystem::exists(home.file("nodus.db")));
}

}  // namespace
}  // namespace nodus::testing

namespace nodus::testing {
namespace {

// `__sentinel` is started by a local job's supervisor only: typed by a user, with arguments that
// are not a sentinel's, it is one line and 125, and it touches nothing.
TEST(BadInputSentinel, ArgumentsThatAreNotASentinelsAreOneLineAnd125) {
  NodusHome home;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"__sentinel"},
                                               {"__sentinel", "x", "0", "4", "t", ""},
                                               {"__sentinel", "-1", "0", "-1", "t", ""},
                                               {"__sentinel", "12x", "0", "-1", "t", ""}}) {
    auto r = home.run(args);
    EXPECT_EQ(r.code, 125) << args.size();
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("__sentinel: not a sentinel's arguments"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(home.file("nodus.db")));
}

// A mistyped NODUS_GPU_QUEUE_AFTER is named before anything runs or is stored.
TEST(BadInputEnv, AMistypedQueueGraceIsOneLineAnd125AndNothingRuns) {
  NodusHome home;
  const std::map<std::string, std::string> env{{"NODUS_LOCAL_GPUS", "H100:2"},
                                               {"NODUS_GPU_QUEUE_AFTER", "soon"}};
  const std::string ran = home.file("ran");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--gpu", "H100", "--", "touch", ran},
        {"sweep", "-p", "i=1,2", "--gpu", "H100", "--", "touch", ran}}) {
    auto r = home.run(args, env);
    EXPECT_EQ(r.code, 125) << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("NODUS_GPU_QUEUE_AFTER: invalid value 'soon'"), std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(ran));
  auto ps = home.run({"ps", "-a", "--format", "json"});
  EXPECT_EQ(nlohmann::json::parse(ps.out).size(), 0u) << ps.out;
}

}  // namespace
}  // namespace nodus::testing
