#include "report/format.h"

#include <gtest/gtest.h>

namespace nodus::report {
namespace {

TEST(FormatNumber, GroupsThousandsAndKeepsThreeSignificantDigitsForSmallValues) {
  EXPECT_EQ(format_number(8400), "8,400");
  EXPECT_EQ(format_number(1234567.8), "1,234,568");
  EXPECT_EQ(format_number(312.4), "312");
  EXPECT_EQ(format_number(42.57), "42.6");
  EXPECT_EQ(format_number(3.456), "3.46");
  EXPECT_EQ(format_number(3.5), "3.5");
  EXPECT_EQ(format_number(0.01234), "0.0123");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(-2500), "-2,500");
}

TEST(FormatTick, UsesJustEnoughDecimalsForTheStep) {
  EXPECT_EQ(format_tick(2500, 500), "2,500");
  EXPECT_EQ(format_tick(10000, 2000), "10,000");
  EXPECT_EQ(format_tick(0.25, 0.05), "0.25");
  EXPECT_EQ(format_tick(0.5, 0.25), "0.50");
  EXPECT_EQ(format_tick(1, 0.2), "1.0");
  EXPECT_EQ(format_tick(0, 0.002), "0.000");
}

TEST(FormatSeconds, ReadsLikeTheCliTables) {
  EXPECT_EQ(format_seconds(0.85), "850ms");
  EXPECT_EQ(format_seconds(245), "4m05s");
  EXPECT_EQ(format_seconds(3720), "1h02m");
}

TEST(FormatDateUtc, IsUtcAndEmptyWhenUnknown) {
  EXPECT_EQ(format_date_utc(1794496980), "2026-11-12 15:23 UTC");
  EXPECT_EQ(format_date_utc(0), "");
}

TEST(ShellJoin, QuotesWordsAShellWouldSplitOrExpand) {
  EXPECT_EQ(shell_join({"python", "train.py", "--lr=0.1", "{num_workers}"}),
            "python train.py --lr=0.1 {num_workers}");
  EXPECT_EQ(shell_join({"echo", "a b", "it's", "$HOME", ""}), "echo 'a b' 'it'\\''s' '$HOME' ''");
  EXPECT_EQ(shell_join({"echo", "{a,b}", "{1..3}"}), "echo '{a,b}' '{1..3}'");
}

TEST(GpuText, NamesCountAndType) {
  EXPECT_EQ(gpu_text("H200", 8), "8 \xC3\x97 H200");
  EXPECT_EQ(gpu_text("", 0), "CPU only");
}

TEST(WorkItems, ComesFromTheThroughputUnit) {
  EXPECT_EQ(work_items("samples/s"), "samples");
  EXPECT_EQ(work_items("tokens/s"), "tokens");
  EXPECT_EQ(work_items("it/min"), "samples");
}

}  // namespace
}  // namespace nodus::report
