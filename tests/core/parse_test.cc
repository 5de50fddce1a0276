#include "core/parse.h"

#include <gtest/gtest.h>

#include <cmath>

namespace nodus {
namespace {

// One rule for every percentage nodus prints (tables, findings, `show`, reports).
TEST(FormatPercent, OneDecimalNoTrailingZero) {
  EXPECT_EQ(format_percent(83.2), "83.2%");
  EXPECT_EQ(format_percent(10.3), "10.3%");  // not "10%" beside a "> 10%" threshold
  EXPECT_EQ(format_percent(31.04), "31%");
  EXPECT_EQ(format_percent(72), "72%");
  EXPECT_EQ(format_percent(100), "100%");
  EXPECT_EQ(format_percent(4.25), "4.2%");
  EXPECT_EQ(format_percent(3.25), "3.2%");
  EXPECT_EQ(format_percent(5), "5%");
  EXPECT_EQ(format_percent(9.96), "10%");
  EXPECT_EQ(format_percent(0.04), "0%");
  EXPECT_EQ(format_percent(0), "0%");
  EXPECT_EQ(format_percent(-0.01), "0%");
  EXPECT_EQ(format_percent(std::nan("")), "n/a");
}

TEST(ParseDuration, AcceptsUnitsAndCombinations) {
  EXPECT_EQ(parse_duration("90s")->count(), 90'000);
  EXPECT_EQ(parse_duration("30m")->count(), 1'800'000);
  EXPECT_EQ(parse_duration("2h")->count(), 7'200'000);
  EXPECT_EQ(parse_duration("1h30m")->count(), 5'400'000);
  EXPECT_EQ(parse_duration("1d")->count(), 86'400'000);
  EXPECT_EQ(parse_duration("250ms")->count(), 250);
  EXPECT_EQ(parse_duration("1.5s")->count(), 1500);
  EXPECT_EQ(parse_duration("5")->count(), 5000);
}

TEST(ParseDuration, RejectsZeroGarbageAndNamesTheValue) {
  for (const char* bad : {"", "0", "0s", "abc", "5x", "-1s", "1h30", "nan", "inf", "s"}) {
    auto r = parse_duration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "'"), std::string::npos);
    EXPECT_NE(r.error().message.find("--timeout"), std::string::npos);
  }
}

TEST(ParseUsd, AcceptsDollarForms) {
  EXPECT_DOUBLE_EQ(*parse_usd("5"), 5.0);
  EXPECT_DOUBLE_EQ(*parse_usd("5.00"), 5.0);
  EXPECT_DOUBLE_EQ(*parse_usd("$5"), 5.0);
  EXPECT_DOUBLE_EQ(*parse_usd("0.25"), 0.25);
}

TEST(ParseUsd, RejectsZeroNegativeNanInfGarbage) {
  for (const char* bad : {"0", "-1", "nan", "NaN", "inf", "1e999", "five", "$", "", "0x10"})
    EXPECT_FALSE(parse_usd(bad).ok()) << bad;
}

TEST(ParseGpuRequest, TypeAndCount) {
  auto r = parse_gpu_request("h100:8");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, "h100");
  EXPECT_EQ(r->count, 8);
  EXPECT_EQ(parse_gpu_request("L4")->count, 1);
  EXPECT_TRUE(parse_gpu_request("none")->none());
}

TEST(ParseGpuRequest, RejectsBadCounts) {
  for (const char* bad : {"H100:0", "H100:-1", "H100:x", "H100:", ":2", "H100:1.5", "H 100"})
    EXPECT_FALSE(parse_gpu_request(bad).ok()) << bad;
}

TEST(ParseEnv, SplitsAtFirstEquals) {
  auto r = parse_env_assignment("A=b=c");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, "A");
  EXPECT_EQ(r->second, "b=c");
  EXPECT_FALSE(parse_env_assignment("=x").ok());
  EXPECT_FALSE(parse_env_assignment("1A=x").ok());
  EXPECT_FALSE(parse_env_assignment("noequals").ok());
}

TEST(ParseEnv, AValueNoProgramCouldReceiveIsRefusedAndNoValueIsEchoed) {
  const std::string fits = "A=" + std::string(131071 - 2, 'x');
  EXPECT_TRUE(parse_env_assignment(fits).ok());
  auto big = parse_env_assignment("BIG=" + std::string(300000, 'x'));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("BIG=" + std::string(32, 'x') + "... is 300004 bytes"),
            std::string::npos)
      << big.error().message.substr(0, 200);
  EXPECT_LT(big.error().message.size(), 200u);
  auto bad_name = parse_env_assignment("1TOKEN=hunter2");
  ASSERT_FALSE(bad_name.ok());
  EXPECT_EQ(bad_name.error().message.find("hunter2"), std::string::npos)
      << bad_name.error().message;
}

TEST(FormatUsd, CentsAndSubCent) {
  EXPECT_EQ(format_usd(499.2), "$499.20");
  EXPECT_EQ(format_usd(0.0012), "$0.0012");
  EXPECT_EQ(format_usd(0), "$0.00");
}

}  // namespace
}  // namespace nodus
