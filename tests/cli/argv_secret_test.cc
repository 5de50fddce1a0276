// Issue 28, item 1: credentials in the command's own arguments (a URL's password, a token query
// parameter, --password=..., --api-key ...) reach the job byte for byte in every mode (attached,
// detached, sweep cells, detached sweep), and never the store, its WAL, or what show, ps and
// sweeps print. A sweep with such a command resumes when its command is repeated, and is refused
// with a clear message when only its id is given (nodus kept no credential to run it with).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

namespace fs = std::filesystem;

// Each secret carries "SECRET", so one search finds any of them; "A\xff" + "B" is not UTF-8 and
// must reach the job as those three bytes.
const std::vector<std::string> kArgs = {"--url",
                                        "https://user:SECRETpw1@host/x",
                                        "https://h/x?token=SECRETq2&page=3",
                                        "--password=SECRETpw3",
                                        "--api-key",
                                        "SECRETkey4",
                                        "plain",
                                        std::string("A\xff") + "B"};

// The job writes each of its arguments on a line of the file named by its first.
std::vector<std::string> command(const std::string& out_file) {
  std::vector<std::string> c = {
      "--", "sh",    "-c", "f=$1; shift; for a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$f\"",
      "sh", out_file};
  c.insert(c.end(), kArgs.begin(), kArgs.end());
  return c;
}

std::string expected_lines() {
  std::string s;
  for (const auto& a : kArgs) s += a + "\n";
  return s;
}

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The store, its WAL and journal, logs and metrics: every file nodus wrote, not the job's.
std::string store_bytes(const NodusHome& home) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(home.path())) {
    if (!e.is_regular_file() || e.path().filename().string().rfind("seen", 0) == 0) continue;
    out += read_file(e.path().string());
  }
  return out;
}

TEST(ArgvSecrets, TheJobGetsThemExactlyTheStoreAndOutputNever) {
  NodusHome home;
  auto attached = home.run(with({"run"}, command(home.file("seen-attached"))));
  ASSERT_EQ(attached.code, 0) << attached.err;
  EXPECT_EQ(read_file(home.file("seen-attached")), expected_lines());

  auto detached = home.run(with({"run", "-d"}, command(home.file("seen-detached"))));
  ASSERT_EQ(detached.code, 0) << detached.err;
  auto waited = home.run({"wait", first_line(detached.out)});
  ASSERT_EQ(waited.code, 0) << waited.err;
  EXPECT_EQ(read_file(home.file("seen-detached")), expected_lines());

  auto sweep = home.run(with({"sweep", "--param", "i=1,2"}, command(home.file("seen-cell{i}"))));
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  EXPECT_EQ(read_file(home.file("seen-cell1")), expected_lines());
  EXPECT_EQ(read_file(home.file("seen-cell2")), expected_lines());

  auto dsweep =
      home.run(with({"sweep", "-d", "--param", "i=1,2"}, command(home.file("seen-dcell{i}"))));
  ASSERT_EQ(dsweep.code, 0) << dsweep.err;
  auto dwaited = home.run({"wait", first_line(dsweep.out)});
  ASSERT_EQ(dwaited.code, 0) << dwaited.err;
  EXPECT_EQ(read_file(home.file("seen-dcell1")), expected_lines());
  EXPECT_EQ(read_file(home.file("seen-dcell2")), expected_lines());

  std::string printed =
      attached.out + attached.err + detached.out + sweep.out + sweep.err + dsweep.out + dsweep.err;
  for (auto cmd : std::vector<std::vector<std::string>>{{"show", "1", "--format", "json"},
                                                        {"show", "1"},
                                                        {"ps", "-a", "--format", "json"},
                                                        {"ps", "-a"},
                                                        {"sweeps", "--format", "json"},
                                                        {"sweeps"}}) {
    auto r = home.run(cmd);
    EXPECT_EQ(r.code, 0) << r.err;
    printed += r.out + r.err;
  }
  EXPECT_EQ(printed.find("SECRET"), std::string::npos) << printed;
  EXPECT_EQ(store_bytes(home).find("SECRET"), std::string::npos) << "a secret under NODUS_HOME";

  auto shown = show_json(home, "1")["command"];
  ASSERT_EQ(shown.size(), 5 + kArgs.size());
  EXPECT_EQ(shown[5], "--url");
  EXPECT_EQ(shown[6], "https://user:<redacted>@host/x");
  EXPECT_EQ(shown[7], "https://h/x?token=<redacted>&page=3");
  EXPECT_EQ(shown[8], "--password=<redacted>");
  EXPECT_EQ(shown[9], "--api-key");
  EXPECT_EQ(shown[10], "<redacted>");
  EXPECT_EQ(shown[11], "plain");
}

TEST(ArgvSecrets, ASweepResumesFromItsRepeatedCommandNotFromItsId) {
  NodusHome home;
  std::vector<std::string> sweep =
      with({"sweep", "--param", "i=1,2"}, command(home.file("seen-cell{i}")));
  ASSERT_EQ(home.run(sweep).code, 0);

  auto by_id = home.run({"sweep", "--resume", "s1"});
  EXPECT_EQ(by_id.code, 125);
  EXPECT_NE(by_id.err.find("credential"), std::string::npos) << by_id.err;
  EXPECT_EQ(by_id.err.find("SECRET"), std::string::npos) << by_id.err;

  // Repeated: the same definition (it is hashed as stored, redacted), every cell already done.
  std::vector<std::string> again = sweep;
  again.insert(again.begin() + 1, {"--resume", "s1"});
  auto resumed = home.run(again);
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(resumed.err.find("definition changed"), std::string::npos) << resumed.err;
}

// Issue 30, item 7: a JWT (what `scontrol token` mints) copied into an innocently named -e
// variable or an argument, and a copy of the configured token (SLURM_JWT) whatever its form,
// reach the job exactly and never the store or what show and ps print.
TEST(ArgvSecrets, AJwtOrTheConfiguredTokenIsRedactedWhateverItIsCalled) {
  NodusHome home;
  const std::string jwt =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3OTk5OTk5OTksInN1biI6Im5vZHVzIn0."
      "SECRETsig_Qe4ZJ1aYtV0wQm5mJx0n2pX";
  const std::string site_token = "SECRET-site-token-42";
  const std::map<std::string, std::string> env = {{"SLURM_JWT", site_token}};
  auto r = home.run({"run", "-e", "COPY=" + jwt, "-e", "TOKCOPY=" + site_token, "--", "sh", "-c",
                     "printf '%s\\n' \"$COPY\" \"$TOKCOPY\" \"$1\" > " + home.file("seen-jwt"),
                     "sh", "Bearer " + jwt},
                    env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(home.file("seen-jwt")), jwt + "\n" + site_token + "\nBearer " + jwt + "\n");
  std::string printed = r.out + r.err;
  for (auto cmd : std::vector<std::vector<std::string>>{
           {"show", "1", "--format", "json"}, {"show", "1"}, {"ps", "-a", "--format", "json"}}) {
    auto shown = home.run(cmd);  // without SLURM_JWT: what the store kept
    EXPECT_EQ(shown.code, 0) << shown.err;
    printed += shown.out + shown.err;
  }
  EXPECT_EQ(printed.find("SECRET"), std::string::npos) << printed;
  EXPECT_EQ(store_bytes(home).find("SECRET"), std::string::npos) << "a token under NODUS_HOME";
  auto job = show_json(home, "1");
  EXPECT_EQ(job["env"]["COPY"], "<redacted>");
  EXPECT_EQ(job["env"]["TOKCOPY"], "<redacted>");
  EXPECT_EQ(job["command"].back(), "Bearer <redacted>");
}

// Issue 62, item 7: a secret-named NAME=VALUE, a credential header and a token with a well-known
// shape, given as plain arguments, reach the job exactly and never the store or what show and ps
// print; ordinary arguments that only look alike stay as typed.
TEST(ArgvSecrets, AssignmentsHeadersAndKnownTokensAreRedacted) {
  NodusHome home;
  const std::string gh = "ghp_R3dT3amT0kenAbCdEfGhIjKlMnOpQrStUv12";
  const std::vector<std::string> secrets = {"aws11", "bear12", gh, "hunter2"};
  const std::vector<std::string> args = {"AWS_SECRET_ACCESS_KEY=aws11",
                                         "Authorization: Bearer bear12",
                                         gh,
                                         "--password",
                                         "hunter2",
                                         "--lr=1e-3",
                                         "sk-learn",
                                         "--tokens",
                                         "2000"};
  auto r = home.run(
      with({"run", "--", "sh", "-c", "printf '%s\n' \"$@\" > " + home.file("seen"), "sh"}, args));
  ASSERT_EQ(r.code, 0) << r.err;
  std::string lines;
  for (const auto& a : args) lines += a + "\n";
  EXPECT_EQ(read_file(home.file("seen")), lines);

  auto json = home.run({"show", "1", "--format", "json"});
  auto ps = home.run({"ps", "-a"});
  ASSERT_EQ(json.code, 0) << json.err;
  ASSERT_EQ(ps.code, 0) << ps.err;
  std::string db = read_file(home.file("nodus.db"));
  if (fs::exists(home.file("nodus.db-wal"))) db += read_file(home.file("nodus.db-wal"));
  ASSERT_FALSE(db.empty());
  for (const auto& secret : secrets) {
    EXPECT_EQ(json.out.find(secret), std::string::npos) << secret << " in " << json.out;
    EXPECT_EQ(ps.out.find(secret), std::string::npos) << secret << " in " << ps.out;
    EXPECT_EQ((r.out + r.err).find(secret), std::string::npos) << secret;
    EXPECT_EQ(db.find(secret), std::string::npos) << secret << " in nodus.db";
  }
  const std::vector<std::string> expected = {"AWS_SECRET_ACCESS_KEY=<redacted>",
                                             "Authorization: Bearer <redacted>",
                                             "<redacted>",
                                             "--password",
                                             "<redacted>",
                                             "--lr=1e-3",
                                             "sk-learn",
                                             "--tokens",
                                             "2000"};
  auto shown = nlohmann::json::parse(json.out)["command"].get<std::vector<std::string>>();
  ASSERT_EQ(shown.size(), 4 + expected.size());  // sh -c <script> sh, then the arguments
  EXPECT_EQ(std::vector<std::string>(shown.begin() + 4, shown.end()), expected);
}

// Item 1's --save half: a secret is never written to a spec file. Secret -e values become
// ${NAME} references (read back from nodus's environment when the file runs); a command with a
// credential in its arguments is refused with one line, and no file is made.
TEST(ArgvSecrets, SaveWritesReferencesNeverSecretsInA0600File) {
  NodusHome home;
  std::string saved = home.file("saved.yaml");
  std::string seen = home.file("seen-{i}");
  std::vector<std::string> sweep = {"sweep",
                                    "--param",
                                    "i=1,2",
                                    "-e",
                                    "HF_TOKEN=SECRETtok5",
                                    "-e",
                                    "MIRROR=https://me:SECRETpw6@h/x",
                                    "-e",
                                    "LR=0.1",
                                    "--save",
                                    saved,
                                    "--",
                                    "sh",
                                    "-c",
                                    "echo $HF_TOKEN $MIRROR $LR > " + seen};
  auto r = home.run(sweep);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string text = read_file(saved);
  EXPECT_EQ(text.find("SECRET"), std::string::npos) << text;
  EXPECT_NE(text.find("HF_TOKEN: ${HF_TOKEN}"), std::string::npos) << text;
  EXPECT_NE(text.find("MIRROR: ${MIRROR}"), std::string::npos) << text;
  EXPECT_NE(text.find("LR: 0.1"), std::string::npos) << text;
  EXPECT_NE(r.err.find("${HF_TOKEN}"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("SECRET"), std::string::npos) << r.err;
  struct stat st {};
  ASSERT_EQ(stat(saved.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // Loaded back with the variables exported: the job gets the real values.
  auto run = home.run({"sweep", "-f", saved},
                      {{"HF_TOKEN", "SECRETtok5"}, {"MIRROR", "https://me:SECRETpw6@h/x"}});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(read_file(home.file("seen-1")), "SECRETtok5 https://me:SECRETpw6@h/x 0.1\n");
  // Not exported: refused, naming the variable, nothing run.
  auto unset = home.run({"sweep", "-f", saved});
  EXPECT_EQ(unset.code, 125);
  EXPECT_NE(unset.err.find("HF_TOKEN"), std::string::npos) << unset.err;

  std::string refused = home.file("refused.yaml");
  auto with_arg = home.run({"sweep", "--param", "i=1,2", "--save", refused, "--", "tool",
                            "--password=SECRETpw7", "{i}"});
  EXPECT_EQ(with_arg.code, 125);
  EXPECT_NE(with_arg.err.find("--password=<redacted>"), std::string::npos) << with_arg.err;
  EXPECT_EQ(with_arg.err.find("SECRET"), std::string::npos) << with_arg.err;
  EXPECT_FALSE(fs::exists(refused));
}

}  // namespace
}  // namespace nodus::testing
