// A sweep param holding a credential (a URL's password, a token query parameter, or a name that
// says it is a secret) is refused before anything runs or is stored: params are printed (progress,
// tables, show) and stored exactly, since --resume re-creates the cells from them.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

size_t count_lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// Rows of `nodus sweeps` and `nodus ps -a` (999: not a JSON array).
size_t rows(const NodusHome& home, const std::vector<std::string>& command) {
  auto j = nlohmann::json::parse(home.run(command).out, nullptr, false);
  return j.is_array() ? j.size() : 999;
}

struct SweepCase {
  std::vector<std::string> params;  // each after its own -p
  std::string secret;               // must appear nowhere nodus prints or keeps
  std::string mention;              // what the one line names
};

void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.mention; }

class SweepParamSecret : public ::testing::TestWithParam<SweepCase> {};

TEST_P(SweepParamSecret, IsRefusedWith125OneLineAndNothingRunOrStored) {
  NodusHome home;
  std::vector<std::string> args = {"sweep"};
  for (const auto& p : GetParam().params) args.insert(args.end(), {"-p", p});
  args.insert(args.end(), {"--", "touch", home.file("marker")});
  auto r = home.run(args, {{"NODUS_LOCAL_GPUS", "H100:4"}});
  EXPECT_EQ(r.code, 125) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("nodus: " + GetParam().mention, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("--env NAME"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ((r.out + r.err).find(GetParam().secret), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(home.file("marker"))) << "a cell ran";
  if (std::filesystem::exists(home.file("nodus.db"))) {
    EXPECT_EQ(rows(home, {"sweeps", "--format", "json"}), 0u) << "a refused sweep was stored";
    EXPECT_EQ(rows(home, {"ps", "-a", "--format", "json"}), 0u) << "a refused sweep stored a job";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SweepParamSecret,
    ::testing::Values(
        SweepCase{{"url=https://u:urlpwCCC@h/x"},
                  "urlpwCCC",
                  "--param url: its value 'https://u:<redacted>@h/x' holds a credential"},
        SweepCase{{"n=1,2", "url=https://h/x?access_token=tokDDD"},
                  "tokDDD",
                  "--param url: its value 'https://h/x?access_token=<redacted>'"},
        SweepCase{{"password=pwEEE1,pwEEE2"}, "pwEEE", "--param password: its name"},
        SweepCase{{"api_key=sk_live_FFF"}, "sk_live_FFF", "--param api_key: its name"}));

// A spec file's params take the same road as --param's.
TEST(SweepParamSecretFile, ASpecFilesParamIsRefusedToo) {
  NodusHome home;
  write_file(home.file("s.yaml"),
             "params:\n  url: [\"https://u:filepwGGG@h/x\"]\ncommand: [touch, " +
                 home.file("marker") + "]\n");
  auto r = home.run({"sweep", "-f", home.file("s.yaml")}, {{"NODUS_LOCAL_GPUS", "H100:4"}});
  EXPECT_EQ(r.code, 125) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--param url: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("filepwGGG"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(home.file("marker")));
}

TEST(SweepParamSecretFile, AUrlWithoutCredentialsIsStillAParam) {
  NodusHome home;
  auto r = home.run({"sweep", "-p", "url=https://h/x", "--", "sh", "-c",
                     "printf %s \"$1\" > \"$2\"", "sh", "{url}", home.file("seen")},
                    {{"NODUS_LOCAL_GPUS", "H100:4"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(home.file("seen")), "https://h/x");
}

}  // namespace
}  // namespace nodus::testing
