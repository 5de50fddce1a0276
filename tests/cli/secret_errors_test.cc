// An error message that quotes a mistyped value shows the credential it held redacted, with the
// same exit code and the rest of the message as before, and the store (a launch's error in the
// job's note) does not keep it either.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

struct ErrorCase {
  std::vector<std::string> args;
  int code;
  std::string secret;
  std::string mention;  // the rest of the message, still there
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.mention; }

class SecretInError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SecretInError, IsRedactedAndTheExitCodeStays) {
  NodusHome home;
  auto r = home.run(GetParam().args, {{"NODUS_LOCAL_GPUS", "H100:4"}});
  EXPECT_EQ(r.code, GetParam().code) << r.err;
  EXPECT_EQ((r.out + r.err).find(GetParam().secret), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(GetParam().mention), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("<redacted>"), std::string::npos) << r.err;
  // Nor does the store keep it (the job's note holds a launch's error).
  if (std::filesystem::exists(home.file("nodus.db"))) {
    auto ps = home.run({"ps", "-a", "--format", "json"});
    EXPECT_EQ(ps.out.find(GetParam().secret), std::string::npos) << ps.out;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SecretInError,
    ::testing::Values(
        ErrorCase{{"run", "--", "https://u:ccc333pw@host/x"},
                  127,
                  "ccc333pw",
                  "command not found: 'https://u:<redacted>@host/x'"},
        ErrorCase{{"run", "--api-keyy=sk_live_aaa111", "--", "true"},
                  125,
                  "sk_live_aaa111",
                  "--api-keyy="},
        ErrorCase{{"run", "--workdir", "/x/https://u:fff666pw@h", "--", "true"},
                  125,
                  "fff666pw",
                  "--workdir"},
        ErrorCase{{"run", "--gpu", "https://u:ggg777pw@h", "--", "true"}, 125, "ggg777pw", "--gpu"},
        ErrorCase{{"run", "--timeout", "https://u:hhh888pw@h", "--", "true"},
                  125,
                  "hhh888pw",
                  "--timeout"}));

}  // namespace
}  // namespace nodus::testing
