#include "sweep/metric_flood.h"

#include <gtest/gtest.h>

namespace nodus::sweep {
namespace {

TEST(MetricCoalescer, KeepsTheNewestValueOnceAMetricFloodsATick) {
  CoalesceLimits limits;
  limits.per_name = 3;
  MetricCoalescer c(limits);
  for (int i = 0; i < 1000; ++i) c.add({double(i), "x", double(i)});
  c.add({5, "y", 1});
  auto tick = c.take();
  ASSERT_EQ(tick.size(), 4u);
  EXPECT_EQ(tick[0].value, 0);
  EXPECT_EQ(tick[1].value, 1);
  EXPECT_EQ(tick[2].value, 999);  // the newest replaced the last kept one
  EXPECT_EQ(tick[2].t, 999);
  EXPECT_EQ(tick[3].name, "y");
  EXPECT_EQ(c.stats().coalesced, 997u);
  EXPECT_EQ(c.stats().kept, 4u);
  // A new tick starts with a fresh allowance.
  c.add({2000, "x", 7});
  EXPECT_EQ(c.take().size(), 1u);
}

TEST(MetricCoalescer, BoundsNamesAndStoredPoints) {
  CoalesceLimits limits;
  limits.names = 2;
  limits.max_stored = 5;
  MetricCoalescer c(limits);
  c.add({1, "a", 1});
  c.add({1, "b", 1});
  c.add({1, "c", 1});  // a third name: dropped
  c.add({1, "a", 2});
  EXPECT_EQ(c.take().size(), 3u);
  for (int i = 0; i < 10; ++i) c.add({2, "a", double(i)});
  EXPECT_EQ(c.take().size(), 2u);  // 5 stored in all
  EXPECT_TRUE(c.take().empty());
  EXPECT_EQ(c.stats().dropped_names, 1u);
  EXPECT_GT(c.stats().dropped_store, 0u);
  EXPECT_NE(describe(c.stats()).find("too many metric names"), std::string::npos);
}

}  // namespace
}  // namespace nodus::sweep
