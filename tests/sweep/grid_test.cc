#include "sweep/grid.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace nodus::sweep {
namespace {

std::vector<std::string> values(std::string_view spec) {
  auto axis = parse_param(spec);
  EXPECT_TRUE(axis.ok()) << spec << ": " << (axis.ok() ? "" : axis.error().message);
  return axis.ok() ? axis->values : std::vector<std::string>{};
}

std::string error_of(std::string_view spec) {
  auto axis = parse_param(spec);
  EXPECT_FALSE(axis.ok()) << spec << " was accepted";
  return axis.ok() ? "" : axis.error().message;
}

using V = std::vector<std::string>;

TEST(SweepParam, CommaListKeepsOrderAndStrings) {
  auto axis = parse_param("model=resnet18,vit");
  ASSERT_TRUE(axis.ok());
  EXPECT_EQ(axis->name, "model");
  EXPECT_EQ(axis->values, (V{"resnet18", "vit"}));
  EXPECT_EQ(values("num_workers=16,4,8"), (V{"16", "4", "8"}));
  EXPECT_EQ(values("lr=0.1, 0.01"), (V{"0.1", "0.01"}));
  EXPECT_EQ(values("x=7"), (V{"7"}));
}

TEST(SweepParam, IntegerRangeIsInclusive) {
  EXPECT_EQ(values("n=1..8"), (V{"1", "2", "3", "4", "5", "6", "7", "8"}));
  EXPECT_EQ(values("n=4..4"), (V{"4"}));
  EXPECT_EQ(values("n=-2..1"), (V{"-2", "-1", "0", "1"}));
}

TEST(SweepParam, SteppedRangeStopsAtOrBeforeTheEnd) {
  EXPECT_EQ(values("n=1..16:4"), (V{"1", "5", "9", "13"}));
  EXPECT_EQ(values("n=0..16:4"), (V{"0", "4", "8", "12", "16"}));
}

TEST(SweepParam, GeometricRangeMultiplies) {
  EXPECT_EQ(values("batch=64..1024:x2"), (V{"64", "128", "256", "512", "1024"}));
  EXPECT_EQ(values("batch=1..100:x10"), (V{"1", "10", "100"}));
  EXPECT_EQ(values("batch=3..100:x3"), (V{"3", "9", "27", "81"}));
}

TEST(SweepParam, GeometricRangeNearInt64MaxDoesNotOverflow) {
  auto v = values("b=1..9223372036854775807:x2");
  ASSERT_EQ(v.size(), 63u);
  EXPECT_EQ(v.back(), "4611686018427387904");
}

TEST(SweepParam, ListsMayMixValuesAndRanges) {
  EXPECT_EQ(values("n=0,2..8:2,16"), (V{"0", "2", "4", "6", "8", "16"}));
  EXPECT_EQ(values("b=32, 64..256:x2"), (V{"32", "64", "128", "256"}));
  EXPECT_NE(error_of("n=1..4,3").find("value '3' appears twice"), std::string::npos);
  EXPECT_NE(error_of("n=1,4..1").find("start 4 is above its end 1"), std::string::npos);
}

TEST(SweepParam, DotsInLiteralValuesAreNotRanges) {
  EXPECT_EQ(values("data=../data,../other"), (V{"../data", "../other"}));
  EXPECT_EQ(values("data=../data"), (V{"../data"}));
  EXPECT_EQ(values("tag=v1..v2"), (V{"v1..v2"}));
}

TEST(SweepParam, RangesWithoutFiniteBoundsAreRefusedNotRunAsLiterals) {
  for (std::string spec :
       {"k=nan..1", "k=inf..1", "k=-inf..1", "k=..5", "k=1..", "k=1..nan", "k=1..inf",
        "k=NaN..2:0.5", "k=..5:1", "k=.5..inf:0.1", "k=1..4:nan", "k=1..4:inf", "k=1..4:xinf"}) {
    std::string msg = error_of(spec);
    EXPECT_EQ(msg.find("--param '" + spec + "': "), 0u) << spec << ": " << msg;
  }
  EXPECT_EQ(values("k=.5..1.5:0.5"), (V{".5", "1", "1.5"}));
  EXPECT_EQ(values("k=..,../x"), (V{"..", "../x"}));
}

TEST(SweepParam, EmptyValuesAreErrors) {
  EXPECT_NE(error_of("a=").find("no values"), std::string::npos);
  EXPECT_NE(error_of("a=1,,2").find("empty value"), std::string::npos);
  EXPECT_NE(error_of("a=1,2,").find("empty value"), std::string::npos);
  EXPECT_NE(error_of("a= , ").find("empty value"), std::string::npos);
}

TEST(SweepParam, ErrorNamesTheSpecAndTheForms) {
  std::string msg = error_of("a=");
  EXPECT_EQ(msg.find("--param 'a=': "), 0u) << msg;
  EXPECT_NE(msg.find("64..1024:x2"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(SweepParam, BadNamesAreErrors) {
  for (auto spec : {"=1,2", "1a=1", "a-b=1", "a b=1", "ä=1", "a.b=1"})
    EXPECT_NE(error_of(spec).find("names are [A-Za-z_][A-Za-z0-9_]*"), std::string::npos) << spec;
  EXPECT_NE(error_of("num_workers").find("missing '='"), std::string::npos);
  EXPECT_TRUE(parse_param("_x9=1").ok());
}

TEST(SweepParam, BadRangesAreErrors) {
  EXPECT_NE(error_of("n=8..1").find("start 8 is above its end 1"), std::string::npos);
  EXPECT_NE(error_of("n=1..8:0").find("step must be >= 1"), std::string::npos);
  EXPECT_NE(error_of("n=1..8:-2").find("step must be >= 1"), std::string::npos);
  EXPECT_NE(error_of("n=1..8:x1").find("FACTOR >= 2"), std::string::npos);
  EXPECT_NE(error_of("n=0..8:x2").find("START >= 1"), std::string::npos);
  EXPECT_NE(error_of("n=1..8:x").find("invalid step"), std::string::npos);
  EXPECT_NE(error_of("n=1..8:two").find("invalid step"), std::string::npos);
  EXPECT_NE(error_of("n=1.5..3").find("needs a step"), std::string::npos);
  EXPECT_NE(error_of("n=1..b").find("must be numbers"), std::string::npos);
  EXPECT_NE(error_of("n=1..").find("must be numbers"), std::string::npos);
  EXPECT_NE(error_of("n=1..99999999999999999999").find("needs a step"), std::string::npos);
  EXPECT_NE(error_of("n=1..8:").find("invalid step"), std::string::npos);
}

TEST(SweepParam, FloatRangesKeepTheBoundsAsWrittenAndDoNotDrift) {
  EXPECT_EQ(values("d=0.1..0.5:0.1"), (V{"0.1", "0.2", "0.3", "0.4", "0.5"}));
  EXPECT_EQ(values("d=0..1:0.25"), (V{"0", "0.25", "0.5", "0.75", "1"}));
  EXPECT_EQ(values("d=1..2:0.3"), (V{"1", "1.3", "1.6", "1.9"}));
  EXPECT_EQ(values("d=-0.3..0.3:0.1"), (V{"-0.3", "-0.2", "-0.1", "0", "0.1", "0.2", "0.3"}));
  EXPECT_EQ(values("d=0.50..1.50:0.5"), (V{"0.50", "1", "1.50"}));
  EXPECT_EQ(values("d=1e-3..3e-3:1e-3"), (V{"1e-3", "2e-3", "3e-3"}));
}

TEST(SweepParam, LogRangesAreEvenlySpacedInLog) {
  EXPECT_EQ(values("lr=1e-5..1e-2:log4"), (V{"1e-5", "1e-4", "1e-3", "1e-2"}));
  EXPECT_EQ(values("n=1..1000:log4"), (V{"1", "10", "100", "1000"}));
  EXPECT_EQ(values("lr=1e-4..1e-2:log3"), (V{"1e-4", "1e-3", "1e-2"}));
  EXPECT_EQ(values("x=1..4:log3"), (V{"1", "2", "4"}));
  EXPECT_NE(error_of("lr=0..1:log3").find("0 < START < END"), std::string::npos);
  EXPECT_NE(error_of("lr=1e-5..1e-2:log1").find("N >= 2"), std::string::npos);
  EXPECT_NE(error_of("lr=1e-5..1e-2:logx").find("N >= 2"), std::string::npos);
  EXPECT_NE(error_of("lr=1..2:log20000").find("more than 10000"), std::string::npos);
}

TEST(SweepParam, FloatGeometricRanges) {
  EXPECT_EQ(values("lr=1e-4..1e-2:x10"), (V{"1e-4", "1e-3", "1e-2"}));
  EXPECT_EQ(values("s=1..5:x1.5"), (V{"1", "1.5", "2.25", "3.375"}));
  EXPECT_NE(error_of("lr=1e-4..1e-2:x1").find("FACTOR > 1"), std::string::npos);
  EXPECT_NE(error_of("lr=-1e-4..1e-2:x10").find("START > 0"), std::string::npos);
  EXPECT_NE(error_of("d=0.1..0.5:0").find("step must be > 0"), std::string::npos);
  EXPECT_NE(error_of("d=0.1..0.5:-0.1").find("step must be > 0"), std::string::npos);
  EXPECT_NE(error_of("d=0.5..0.1:0.1").find("above its end"), std::string::npos);
  EXPECT_NE(error_of("d=0..1:1e-9").find("more than 10000"), std::string::npos);
  EXPECT_NE(error_of("d=0..1e308:nan").find("invalid step"), std::string::npos);
}

TEST(SweepParam, ListValuesAreKeptExactlyAsWritten) {
  EXPECT_EQ(values("lr=3e-4,1E-3,0.0010,+2"), (V{"3e-4", "1E-3", "0.0010", "+2"}));
}

TEST(SweepSample, SameSeedSameCellsAndEveryCellDistinct) {
  auto grid = parse_grid({"a=1..100", "b=1..100"});
  ASSERT_TRUE(grid.ok());
  auto one = sample_cells(*grid, 20, 7);
  EXPECT_EQ(one, sample_cells(*grid, 20, 7));
  EXPECT_NE(one, sample_cells(*grid, 20, 8));
  ASSERT_EQ(one.size(), 20u);
  EXPECT_TRUE(std::is_sorted(one.begin(), one.end()));
  EXPECT_EQ(std::adjacent_find(one.begin(), one.end()), one.end());
  for (int i : one) EXPECT_LT(i, 10000);
  // Not the first 20 cells: a random subset spreads over the grid.
  EXPECT_GT(one.back(), 1000);
  // Asking for more than the grid has runs the whole grid.
  auto small = parse_grid({"a=1,2,3"});
  EXPECT_EQ(sample_cells(*small, 10, 1), (std::vector<int>{0, 1, 2}));
}

TEST(SweepSample, ChecksTheSampleNotTheGrid) {
  auto huge = parse_grid({"a=1..10000", "b=1..10000"});  // 1e8 cells: too many to run whole
  ASSERT_TRUE(huge.ok());
  EXPECT_FALSE(check_cell_count(*huge, true).ok());
  EXPECT_TRUE(check_sample(*huge, 50, false).ok());
  EXPECT_FALSE(check_sample(*huge, 0, false).ok());
  EXPECT_FALSE(check_sample(*huge, 5000, false).ok());
  EXPECT_TRUE(check_sample(*huge, 5000, true).ok());
  EXPECT_EQ(sample_cells(*huge, 50, 3).size(), 50u);
}

TEST(SweepParam, HugeAxesAreErrors) {
  EXPECT_NE(error_of("n=1..100000000").find("more than 10000 values"), std::string::npos);
  EXPECT_NE(error_of("n=-9223372036854775807..9223372036854775807").find("more than 10000"),
            std::string::npos);
  // A huge span with a huge step is small and must not overflow.
  EXPECT_EQ(values("n=-9223372036854775807..9223372036854775807:9223372036854775807"),
            (V{"-9223372036854775807", "0", "9223372036854775807"}));
  EXPECT_EQ(values("n=1..10000").size(), 10000u);
}

TEST(SweepParam, DuplicateValuesAreErrors) {
  EXPECT_NE(error_of("a=4,8,4").find("value '4' appears twice"), std::string::npos);
  EXPECT_NE(error_of("m=vit, vit").find("value 'vit' appears twice"), std::string::npos);
}

TEST(SweepGrid, DuplicateNamesAreErrors) {
  auto grid = parse_grid({"a=1,2", "b=3", "a=5"});
  ASSERT_FALSE(grid.ok());
  EXPECT_EQ(grid.error().message, "--param 'a=5': param 'a' is given twice; give each name once");
}

TEST(SweepGrid, NamesDifferingOnlyInCaseAreErrors) {
  auto grid = parse_grid({"lr=0.1", "LR=0.2"});
  ASSERT_FALSE(grid.ok());
  EXPECT_NE(grid.error().message.find("NODUS_PARAM_LR"), std::string::npos);
}

TEST(SweepGrid, NoParamsIsAnError) { EXPECT_FALSE(parse_grid({}).ok()); }

TEST(SweepGrid, FirstErrorIsReported) {
  auto grid = parse_grid({"a=1,2", "b=", "c=1"});
  ASSERT_FALSE(grid.ok());
  EXPECT_EQ(grid.error().message.find("--param 'b='"), 0u);
}

TEST(SweepExpand, CountIsTheProductOfAxisSizes) {
  auto grid = parse_grid({"a=1..3", "b=x,y", "c=64..1024:x2"});
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(cell_count(*grid), 30u);
  EXPECT_EQ(expand(*grid).size(), 30u);
}

TEST(SweepExpand, FirstParamIsOutermost) {
  auto grid = parse_grid({"num_workers=0,4", "batch_size=64,128,256"});
  ASSERT_TRUE(grid.ok());
  auto cells = expand(*grid);
  ASSERT_EQ(cells.size(), 6u);
  std::vector<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(cells[i].index, static_cast<int>(i));
    ASSERT_EQ(cells[i].params.size(), 2u);
    EXPECT_EQ(cells[i].params[0].name, "num_workers");
    EXPECT_EQ(cells[i].params[1].name, "batch_size");
    seen.emplace_back(cells[i].params[0].value, cells[i].params[1].value);
  }
  EXPECT_EQ(seen,
            (std::vector<std::pair<std::string, std::string>>{
                {"0", "64"}, {"0", "128"}, {"0", "256"}, {"4", "64"}, {"4", "128"}, {"4", "256"}}));
}

TEST(SweepExpand, CellAtMatchesExpand) {
  auto grid = parse_grid({"a=1..3", "b=p,q", "c=1..16:4"});
  ASSERT_TRUE(grid.ok());
  auto cells = expand(*grid);
  for (const auto& cell : cells) EXPECT_EQ(cell_at(*grid, cell.index).params, cell.params);
}

TEST(SweepExpand, CountIsComputedWithoutExpanding) {
  std::vector<std::string> specs(6, "");
  for (int i = 0; i < 6; ++i) specs[i] = "p" + std::to_string(i) + "=1..10000";
  auto grid = parse_grid(specs);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(cell_count(*grid), UINT64_MAX);  // 1e24 saturates
  auto check = check_cell_count(*grid, true);
  ASSERT_FALSE(check.ok());
  EXPECT_NE(check.error().message.find("at most 100000"), std::string::npos);
}

TEST(SweepExpand, MoreThanAThousandCellsNeedConfirmation) {
  auto small = parse_grid({"a=1..10", "b=1..100"});
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(check_cell_count(*small, false).ok());  // exactly 1000

  auto grid = parse_grid({"a=1..11", "b=1..100"});
  ASSERT_TRUE(grid.ok());
  auto check = check_cell_count(*grid, false);
  ASSERT_FALSE(check.ok());
  EXPECT_EQ(check.error().message,
            "this sweep has 1100 cells (more than 1000); pass --yes to run them all");
  EXPECT_TRUE(check_cell_count(*grid, true).ok());
}

}  // namespace
}  // namespace nodus::sweep
