#include <gtest/gtest.h>

#include <cmath>

#include "billing/catalog.h"
#include "core/parse.h"

namespace nodus::billing {
namespace {

TEST(CostUsd, EightH100SxmForADayIs499Dollars20) {
  double rate = Catalog::builtin().lookup("H100-SXM").value()->usd_per_gpu_hour;
  double cost = cost_usd(8, rate, 24 * 3600.0);
  EXPECT_EQ(std::llround(cost * 100), 49920);
  EXPECT_NEAR(cost, 499.20, 1e-9);
  EXPECT_EQ(format_usd(cost), "$499.20");
}

TEST(CostUsd, BillsPerSecondAndScalesWithGpus) {
  EXPECT_NEAR(cost_usd(1, 3.60, 1), 0.001, 1e-12);
  EXPECT_NEAR(cost_usd(4, 2.60, 90), 4 * 2.60 * 90 / 3600, 1e-12);
  EXPECT_EQ(cost_usd(8, 0.0, 3600), 0.0);
  EXPECT_EQ(cost_usd(0, 0.0, 3600), 0.0);  // a CPU-only job without a declared rate is free
}

TEST(CostUsd, AJobWithoutGpusIsBilledAsOneUnitAtTheBoxRate) {
  EXPECT_NEAR(cost_usd(0, 0.68, 3600), 0.68, 1e-12);  // NODUS_LOCAL_USD_PER_HOUR=0.68
  EXPECT_NEAR(usd_per_second(0, 3.60), 0.001, 1e-12);
}

TEST(CapSeconds, FiveDollarsOnOneH100SxmLastsAboutSixThousandNineHundredSeconds) {
  EXPECT_NEAR(cap_seconds(5.0, 1, 2.60), 6923.08, 0.005);
  EXPECT_NEAR(cap_seconds(5.0, 8, 2.60), 6923.08 / 8, 0.005);
}

TEST(CapSeconds, IsTheInverseOfCost) {
  for (int gpus : {1, 2, 8})
    for (double rate : {0.5904, 2.60, 6.99}) {
      double seconds = cap_seconds(12.34, gpus, rate);
      EXPECT_NEAR(cost_usd(gpus, rate, seconds), 12.34, 1e-9);
    }
}

TEST(CapSeconds, FreeGpusNeverHitTheCap) {
  EXPECT_TRUE(std::isinf(cap_seconds(5.0, 8, 0.0)));
  EXPECT_TRUE(std::isinf(cap_seconds(5.0, 0, 0.0)));
  EXPECT_NEAR(cap_seconds(1.0, 0, 3600), 1.0, 1e-12);  // a $3600/h box: $1 lasts a second
}

}  // namespace
}  // namespace nodus::billing
