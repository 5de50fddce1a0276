// Spec files: `run -f job.yaml`, `sweep -f sweep.yaml`, `--save`. A file and the command line
// it stands for must plan the same cells, both ways; errors name file:line:column.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

const char* kSweepYaml = R"(name: tune
resources:
  gpu: H100
caps:
  max_cost: 2
  timeout: 30m
  grace: 5s
  budget: 20
env:
  DATA: /data/x
params:
  lr: {from: 1e-5, to: 1e-2, log: 4}
  bs: "64..256:x2"
  model: [resnet18, vit]
  drop: {choices: [0.1, 0.25]}
objective: val_acc:max
repeat: 2
parallel: 3
command: [python, train.py, --lr, "{lr}", --bs, "{bs}", --model, "{model}", --drop, "{drop}"]
)";

const std::vector<std::string> kSweepArgs = {"sweep",
                                             "--name",
                                             "tune",
                                             "--gpu",
                                             "H100",
                                             "--max-cost",
                                             "2",
                                             "--timeout",
                                             "30m",
                                             "--grace",
                                             "5s",
                                             "--budget",
                                             "20",
                                             "-e",
                                             "DATA=/data/x",
                                             "-p",
                                             "lr=1e-5..1e-2:log4",
                                             "-p",
                                             "bs=64..256:x2",
                                             "-p",
                                             "model=resnet18,vit",
                                             "-p",
                                             "drop=0.1,0.25",
                                             "--objective",
                                             "val_acc:max",
                                             "--repeat",
                                             "2",
                                             "--parallel",
                                             "3",
                                             "--",
                                             "python",
                                             "train.py",
                                             "--lr",
                                             "{lr}",
                                             "--bs",
                                             "{bs}",
                                             "--model",
                                             "{model}",
                                             "--drop",
                                             "{drop}"};

std::map<std::string, std::string> gpus() { return {{"NODUS_LOCAL_GPUS", "H100:4"}}; }

std::vector<std::string> with(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.begin() + 1, more.begin(), more.end());
  return args;
}

TEST(SpecFile, SweepFileRunsTheSameCellsAsItsCommandLine) {
  NodusHome home;
  write_file(home.file("sweep.yaml"), kSweepYaml);
  auto from_file =
      home.run({"sweep", "-f", home.file("sweep.yaml"), "--dry-run", "--format", "json"}, gpus());
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  auto from_flags = home.run(with(kSweepArgs, {"--dry-run", "--format", "json"}), gpus());
  ASSERT_EQ(from_flags.code, 0) << from_flags.err;
  EXPECT_EQ(from_file.out, from_flags.out);
  EXPECT_EQ(from_file.err, from_flags.err);
  EXPECT_EQ(nlohmann::json::parse(from_file.out).size(), 4u * 3 * 2 * 2 * 2);
  EXPECT_NE(from_file.out.find("\"1e-5\""), std::string::npos) << "values kept as written";
}

TEST(SpecFile, SavedCommandLineRunsTheSameCells) {
  NodusHome home;
  std::string saved = home.file("saved.yaml");
  auto save = home.run(with(kSweepArgs, {"--save", saved}), gpus());
  ASSERT_EQ(save.code, 0) << save.err;
  EXPECT_NE(read_file(saved).find("lr: \"1e-5..1e-2:log4\""), std::string::npos)
      << read_file(saved);
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 0u);
  auto from_file = home.run({"sweep", "-f", saved, "--dry-run", "--format", "json"}, gpus());
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  auto from_flags = home.run(with(kSweepArgs, {"--dry-run", "--format", "json"}), gpus());
  EXPECT_EQ(from_file.out, from_flags.out);
}

// A spec file has no key for some flags (--rate, --util-window, --stop-early, ...): --save with
// one would write a file that runs and bills something else, so it writes nothing and says
// which flag. Likewise an -e value that the file would read as a ${NAME} reference, and -f's own
// file as the one to write.
TEST(SpecFile, SaveRefusesWhatTheFileCouldNotCarry) {
  NodusHome home;
  const std::string saved = home.file("saved.yaml");
  struct Refused {
    std::vector<std::string> flags;
    std::string says;
  };
  for (const Refused& r : std::vector<Refused>{
           {{"--rate", "36"}, "--rate has no key in a spec file"},
           {{"--util-window", "1m"}, "--util-window has no key in a spec file"},
           {{"--stop-early", "2"}, "--stop-early has no key in a spec file"},
           {{"-e", "Y=${HOME}"}, "-e Y's value '${HOME}' would read as a reference"}}) {
    std::vector<std::string> args = {"sweep", "-p", "x=1", "--save", saved};
    args.insert(args.end(), r.flags.begin(), r.flags.end());
    args.insert(args.end(), {"--", "sleep", "{x}"});
    auto refused = home.run(args);
    EXPECT_EQ(refused.code, 125) << refused.err;
    EXPECT_NE(refused.err.find(r.says), std::string::npos) << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(saved)) << r.says;
  }
  ASSERT_EQ(home.run({"sweep", "-p", "x=1", "--save", saved, "--", "sleep", "{x}"}).code, 0);
  const std::string before = read_file(saved);
  auto same = home.run({"sweep", "-f", saved, "-p", "x=2", "--save", saved});
  EXPECT_EQ(same.code, 125) << same.err;
  EXPECT_NE(same.err.find("it is the spec file this sweep was read from"), std::string::npos)
      << same.err;
  EXPECT_EQ(read_file(saved), before);
}

TEST(SpecFile, FlagsWinOverTheFileAndRealRunsMatch) {
  NodusHome home;
  std::string marks = home.file("marks");
  write_file(home.file("s.yaml"),
             "params:\n  i: 1..3\ncommand: [sh, -c, \"echo {i} >> " + marks + "\"]\n");
  auto r = home.run({"sweep", "-f", home.file("s.yaml"), "-p", "i=7,8", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cells"].size(), 2u);  // --param replaced the file's params
  EXPECT_EQ(read_file(marks), "7\n8\n");
}

TEST(SpecFile, RunFileRunsTheJob) {
  NodusHome home;
  write_file(home.file("job.yaml"),
             "caps: {timeout: 1s, grace: 100ms}\nenv: {GREETING: hi}\ncommand: [sh, -c, \"echo "
             "$GREETING; sleep 5\"]\n");
  auto r = home.run({"run", "-f", home.file("job.yaml")});
  EXPECT_EQ(r.code, 124) << r.err;
  EXPECT_NE(r.out.find("hi"), std::string::npos) << r.out;
}

// `tf32: true` is --tf32: saved by --save, read back to the same cells, and applied to the job
// (a command the hook cannot reach is refused for it, as --tf32 is); any other value is refused
// with the file's line and column.
TEST(SpecFile, Tf32IsTheFlagBothWays) {
  NodusHome home;
  std::string saved = home.file("tf32.yaml");
  std::vector<std::string> args = {"sweep", "--tf32",  "-p", "i=1,2",
                                   "--",    "python3", "-c", "print({i})"};
  ASSERT_EQ(home.run(with(args, {"--save", saved})).code, 0);
  EXPECT_NE(read_file(saved).find("tf32: true"), std::string::npos) << read_file(saved);
  auto from_file = home.run({"sweep", "-f", saved, "--dry-run", "--format", "json"});
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  auto from_flags = home.run(with(args, {"--dry-run", "--format", "json"}));
  EXPECT_EQ(from_file.out, from_flags.out);

  write_file(home.file("job.yaml"), "tf32: true\ncommand: [sh, -c, \"echo ran\"]\n");
  auto applied = home.run({"run", "-f", home.file("job.yaml")});
  EXPECT_EQ(applied.code, 125) << applied.err;
  EXPECT_NE(applied.err.find("--tf32"), std::string::npos) << applied.err;
  EXPECT_EQ(applied.out.find("ran"), std::string::npos) << applied.out;
  write_file(home.file("off.yaml"), "tf32: false\ncommand: [sh, -c, \"echo ran\"]\n");
  auto off = home.run({"run", "-f", home.file("off.yaml")});
  EXPECT_EQ(off.code, 0) << off.err;

  write_file(home.file("bad.yaml"), "command: [sh, -c, \"echo ran\"]\ntf32: yes please\n");
  auto bad = home.run({"run", "-f", home.file("bad.yaml")});
  EXPECT_EQ(bad.code, 125) << bad.err;
  EXPECT_NE(bad.err.find("bad.yaml:2:7: tf32: invalid value 'yes please': expected true or false"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(bad.out.find("ran"), std::string::npos) << bad.out;
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 1u);
}

// Issue 29 point 6: a relative workdir in a spec file is the file's, as in docker compose (it
// resolved against wherever nodus was started).
TEST(SpecFile, ARelativeWorkdirIsRelativeToTheFile) {
  NodusHome home;
  std::filesystem::create_directories(home.file("proj/data"));
  write_file(home.file("proj/job.yaml"), "workdir: data\ncommand: [pwd]\n");
  auto r = home.run({"run", "-f", home.file("proj/job.yaml")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::filesystem::canonical(home.file("proj/data")).string() + "\n");
  // A --workdir flag is the command line's: relative to the current folder.
  auto flag = home.run({"run", "-f", home.file("proj/job.yaml"), "--workdir", home.path()});
  EXPECT_EQ(flag.out, std::filesystem::canonical(home.path()).string() + "\n") << flag.err;
}

TEST(SpecFile, ErrorsNameFileLineAndColumnAndRunNothing) {
  NodusHome home;
  std::string f = home.file("bad.yaml");
  write_file(f, "params:\n  a: [1, 2]\ncomand: [echo]\n");
  auto r = home.run({"sweep", "-f", f});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find(f + ":3:1: unknown key 'comand'; did you mean command?"), std::string::npos)
      << r.err;
  write_file(f, "params:\n  a: [1, 2\ncommand: [echo]\n");
  r = home.run({"sweep", "-f", f});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find(f + ":"), std::string::npos) << r.err;
  write_file(f, "params:\n  a: [1, 2]\ncommand: echo hi\n");
  r = home.run({"sweep", "-f", f});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find(f + ":3:10: command: expected a list"), std::string::npos) << r.err;
  write_file(f, "params:\n  a: [1, 2]\nrepeat: two\ncommand: [echo]\n");
  r = home.run({"sweep", "-f", f});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find(f + ":3:9: repeat: invalid value 'two'"), std::string::npos) << r.err;
  write_file(f, "params:\n  a: [1]\ncommand: [echo]\n");
  r = home.run({"run", "-f", f});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find("unknown key 'params'"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 0u);
  r = home.run({"sweep", "-f", home.file("missing.yaml")});
  EXPECT_EQ(r.code, 125);
}

// Issue 28: a file's value passes the checks of the flag it stands for (an empty cap is no cap
// to drop, --repeat's 1 to 100 holds), a key appears once, and nothing runs or is stored.
TEST(SpecFile, ValuesAreRefusedExactlyAsTheirFlagsAre) {
  NodusHome home;
  std::string f = home.file("bad.yaml");
  std::string ran = home.file("ran");
  std::string command = "command: [sh, -c, \"touch " + ran + "\"]\n";
  struct Case {
    std::string command;  // run or sweep
    std::string text;     // the file, before its command
    std::string words;    // what the error must say, after "FILE:LINE:COLUMN: "
  };
  for (const Case& c : std::vector<Case>{
           {"run", "caps: {max_cost: \"\"}\n",
            "caps.max_cost: invalid value '': expected a dollar amount > 0"},
           {"run", "caps: {timeout: \"\"}\n",
            "caps.timeout: invalid value '': expected a duration > 0"},
           {"run", "caps: {max_cost: 0}\n", "caps.max_cost: invalid value '0'"},
           {"run", "caps:\n  timeout:\n", "caps.timeout: no value"},
           {"sweep", "params: {a: [1]}\ncaps: {budget: \"\"}\n",
            "caps.budget: invalid value '': expected a dollar amount > 0"},
           {"sweep", "params: {a: [1]}\nrepeat: 1000\n",
            "repeat: Value 1000 not in range 1 to 100"},
           {"sweep", "params: {a: [1]}\nparallel: 5000\n", "parallel: Value 5000 not in range"},
           {"run", "name: \"\"\n", "name: invalid value '': expected a name"},
           {"run", "name: s3\n", "name: invalid value 's3': looks like a job id"},
           {"run", "name: a\nname: b\n", "2:1: duplicate key 'name' (first at line 1)"},
           {"run", "caps: {timeout: 1h, timeout: 1s}\n", "duplicate key 'timeout'"},
           {"run", "env: {A: 1, A: 2}\n", "duplicate key 'A'"},
           {"run", "backend: slurm\nresources: {nodes: 0}\n",
            "invalid value '0': expected a whole number of nodes from 1 to 1024"},
           {"sweep", "params: {a: [1]}\nbackend: slurm\nresources: {nodes: many}\n",
            "invalid value 'many': expected a whole number of nodes"},
       }) {
    write_file(f, c.text + command);
    auto r = home.run({c.command, "-f", f});
    EXPECT_EQ(r.code, 125) << c.text << r.err;
    EXPECT_NE(r.err.find(f + ":"), std::string::npos) << c.text << r.err;
    EXPECT_NE(r.err.find(c.words), std::string::npos) << c.text << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.text << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(ran)) << "a refused file ran its command";
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 0u);
  // The same values the flags take are taken from a file.
  write_file(f, "name: fine\ncaps: {timeout: 30s}\n" + command);
  auto r = home.run({"run", "-f", f});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(ran));
}

}  // namespace
// Issue 30 case 8: a 300 KB env value in a spec file was dropped (Slurm) or failed the start
// after the job was stored (local). No program can receive it: refused before anything runs.
TEST(SpecFile, AnEnvValueNoProgramCouldReceiveIsRefusedBeforeAnythingRuns) {
  NodusHome home;
  write_file(home.file("big.yaml"),
             "command: [sh, -c, 'echo ${#BIG}']\nenv:\n  BIG: " + std::string(300000, 'x') + "\n");
  auto r = home.run({"run", "-f", home.file("big.yaml")});
  EXPECT_EQ(r.code, 125) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("... is 300004 bytes"), std::string::npos) << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 400u);
  auto ps = home.run({"ps", "-a", "--format", "json"});
  ASSERT_EQ(ps.code, 0) << ps.err;
  EXPECT_EQ(nlohmann::json::parse(ps.out).size(), 0u) << ps.out;
}

}  // namespace nodus::testing
