#include "telemetry/estimate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/parse.h"

namespace nodus::telemetry {
namespace {

Estimate h100x8() {
  EstimateInput in;
  in.gpus = 8;
  in.rate = 2.60;
  in.hours = 24;
  in.util_pct = 40;
  auto e = estimate(in);
  EXPECT_TRUE(e.ok());
  return *e;
}

TEST(Estimate, TheWorkedExampleToTheCent) {
  Estimate e = h100x8();
  EXPECT_NEAR(e.busy_hours, 9.6, 1e-12);
  ASSERT_EQ(e.rows.size(), 4u);
  EXPECT_EQ(format_usd(e.rows[0].cost), "$499.20");
  EXPECT_EQ(format_usd(e.rows[0].idle_usd), "$299.52");
  EXPECT_EQ(format_usd(e.rows[1].cost), "$332.80");
  EXPECT_EQ(format_usd(e.rows[2].cost), "$249.60");
  EXPECT_EQ(format_usd(e.rows[3].cost), "$210.19");
  EXPECT_NEAR(e.rows[1].wall_hours, 16, 1e-9);
  EXPECT_NEAR(e.rows[2].wall_hours, 12, 1e-9);
  EXPECT_EQ(format_hours(e.rows[3].wall_hours), "10.1 h");
  EXPECT_EQ(format_usd(e.rows[3].saved), "$289.01");
}

TEST(Estimate, IdleDollarsAtEachUtilization) {
  // docs/facts.md: 40% -> $299.52, 60% -> $199.68, 80% -> $99.84, 95% -> $24.96 of $499.20.
  for (auto [util, idle] :
       {std::pair{40.0, "$299.52"}, {60.0, "$199.68"}, {80.0, "$99.84"}, {95.0, "$24.96"}}) {
    EstimateInput in{8, 2.60, 24, util, {}};
    EXPECT_EQ(format_usd(estimate(in)->rows[0].idle_usd), idle) << util;
  }
}

TEST(Estimate, TableRowsAndRawValues) {
  Table t = estimate_table(h100x8());
  EXPECT_EQ(t.render(Format::kTable),
            "UTIL    WALL     COST   IDLE $    SAVED\n"
            " 40%    24 h  $499.20  $299.52        -\n"
            " 60%    16 h  $332.80  $133.12  $166.40\n"
            " 80%    12 h  $249.60   $49.92  $249.60\n"
            " 95%  10.1 h  $210.19   $10.51  $289.01\n");
  EXPECT_DOUBLE_EQ(t.raw(0)["cost_usd"].get<double>(), 499.2);
  EXPECT_NEAR(t.raw(3)["wall_hours"].get<double>(), 9.6 / 0.95, 1e-12);
}

TEST(Estimate, TargetsAtOrBelowTheCurrentUtilizationAreSkipped) {
  EstimateInput in{1, 2.0, 10, 80, {60, 80, 95}};
  auto e = estimate(in);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->rows.size(), 2u);
  EXPECT_EQ(e->rows[1].util_pct, 95);
}

TEST(Estimate, BadInputNamesTheValue) {
  EXPECT_EQ(estimate({0, 2.6, 24, 40, {}}).error().message,
            "--gpu: invalid count 0: expected 1 or more");
  EXPECT_EQ(estimate({8, 2.6, 0, 40, {}}).error().message,
            "--hours: invalid value 0: expected > 0");
  EXPECT_EQ(estimate({8, 2.6, 24, 0, {}}).error().message,
            "--util: invalid value 0: expected a percentage in (0, 100]");
  EXPECT_EQ(estimate({8, 2.6, 24, 101, {}}).error().message,
            "--util: invalid value 101: expected a percentage in (0, 100]");
  EXPECT_FALSE(estimate({8, -1, 24, 40, {}}).ok());
  EXPECT_FALSE(estimate({8, 2.6, 24, 40, {120}}).ok());
}

TEST(FormatHours, AtMostOneDecimal) {
  EXPECT_EQ(format_hours(24), "24 h");
  EXPECT_EQ(format_hours(10.105), "10.1 h");
  EXPECT_EQ(format_hours(0.25), "15m00s");
  EXPECT_EQ(format_hours(6.0 / 3600), "6.0s");  // not "0 h"
}

}  // namespace
}  // namespace nodus::telemetry
