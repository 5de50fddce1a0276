#include "sweep/metric_regex.h"

#include <gtest/gtest.h>

#include <chrono>

namespace nodus::sweep {
namespace {

std::vector<MetricRegex> regexes(const std::vector<std::string>& specs) {
  auto r = parse_metric_regexes(specs);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? std::move(*r) : std::vector<MetricRegex>{};
}

TEST(MetricRegex, ReadsHuggingFaceTrainerSummary) {
  auto rs = regexes({"samples_per_sec='train_samples_per_second': ([0-9.eE+-]+)",
                     "loss='train_loss': ([0-9.eE+-]+)"});
  auto points =
      extract_metrics(rs,
                      "{'train_runtime': 12.3456, 'train_samples_per_second': 123.4, "
                      "'train_steps_per_second': 3.857, 'train_loss': 0.6931, 'epoch': 1.0}\n",
                      7.5);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].name, "samples_per_sec");
  EXPECT_DOUBLE_EQ(points[0].value, 123.4);
  EXPECT_EQ(points[0].t, 7.5);
  EXPECT_EQ(points[1].name, "loss");
  EXPECT_DOUBLE_EQ(points[1].value, 0.6931);
}

TEST(MetricRegex, WholeMatchIsUsedWithoutACaptureGroup) {
  auto rs = regexes({"n=[0-9]+"});
  auto points = extract_metrics(rs, "throughput 8400/s", 0);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].value, 8400);
}

TEST(MetricRegex, EveryMatchInALineIsAPoint) {
  auto rs = regexes({"loss=loss=([0-9.]+)"});
  auto points = extract_metrics(rs, "loss=1.5 loss=1.25 loss=1", 0);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[2].value, 1);
}

TEST(MetricRegex, NonNumericCapturesAreIgnored) {
  auto rs = regexes({"x=x=(\\S+)"});
  EXPECT_TRUE(extract_metrics(rs, "x=nan x=inf x=abc x=1.2.3 x=1e999", 0).empty());
  EXPECT_EQ(extract_metrics(rs, "x=-2.5e3", 0).at(0).value, -2500);
}

TEST(MetricRegex, OptionalGroupThatDidNotTakePartIsIgnored) {
  auto rs = regexes({"v=step( [0-9]+)?"});
  EXPECT_TRUE(extract_metrics(rs, "step done", 0).empty());
  EXPECT_EQ(extract_metrics(rs, "step 12", 0).at(0).value, 12);
}

TEST(MetricRegex, CarriageReturnsSplitProgressBarRedraws) {
  auto rs = regexes({"it=([0-9.]+)it/s"});
  auto points = extract_metrics(rs, "10%| 1.5it/s\r20%| 2.5it/s\r30%| 3.5it/s\n", 0);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[1].value, 2.5);
}

TEST(MetricRegex, EmptyMatchesDoNotLoop) {
  auto rs = regexes({"a=x*"});
  EXPECT_TRUE(extract_metrics(rs, "yyyy", 0).empty());
}

TEST(MetricRegex, LookaroundIsNotRE2AndIsRejected) {
  auto r = parse_metric_regex("n=[0-9]+(?=/s)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("invalid regex"), std::string::npos) << r.error().message;
}

// (a+)+b against a run of a's without a b backtracks 2^n steps in a backtracking engine (34 a's
// hung std::regex for minutes); RE2 answers in time linear in the line.
TEST(MetricRegex, CatastrophicPatternsRunInLinearTime) {
  auto rs = regexes({"x=(a+)+b"});
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i)
    EXPECT_TRUE(extract_metrics(rs, std::string(34 + i, 'a'), 0).empty());
  EXPECT_TRUE(extract_metrics(rs, std::string(kMaxRegexInput, 'a'), 0).empty());
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(5));  // linear: milliseconds; exponential: never ends
}

TEST(MetricRegex, LongLinesAreSkippedWithoutCrashing) {
  auto rs = regexes({"v=(?:a|b)*([0-9]+)", "w=.*?([0-9]+)$"});
  std::string huge(1 << 20, 'a');
  EXPECT_TRUE(extract_metrics(rs, huge + "7", 0).empty());
  std::string at_limit(kMaxRegexInput - 1, 'b');
  EXPECT_EQ(extract_metrics(rs, at_limit + "7", 0).size(), 2u);
}

TEST(MetricRegex, BadRegexIsAnErrorNamingIt) {
  auto r = parse_metric_regex("loss=([0-9]+");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find("--metric-regex 'loss=([0-9]+': invalid regex"), 0u)
      << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
}

TEST(MetricRegex, BadSpecsAreErrors) {
  EXPECT_NE(parse_metric_regex("no-equals").error().message.find("expected NAME=REGEX"),
            std::string::npos);
  EXPECT_NE(parse_metric_regex("9x=[0-9]+").error().message.find("invalid name '9x'"),
            std::string::npos);
  EXPECT_NE(parse_metric_regex("x=").error().message.find("empty regex"), std::string::npos);
  auto list = parse_metric_regexes({"a=[0-9]+", "b=*"});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().message.find("--metric-regex 'b=*'"), 0u);
}

TEST(MetricRegex, EqualsSignsMayAppearInTheRegex) {
  auto rs = regexes({"lr=lr=([0-9.]+)"});
  EXPECT_EQ(rs.at(0).pattern, "lr=([0-9.]+)");
  EXPECT_EQ(extract_metrics(rs, "epoch 1 lr=0.001", 0).at(0).value, 0.001);
}

}  // namespace
}  // namespace nodus::sweep
