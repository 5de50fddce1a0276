// A repeated sweep starts its longest cells first (engine/cell_order.h): the second run of the
// same command knows each cell's duration from the first. A first run reorders as cells end,
// once the ended cells' params explain how long they took (engine/duration_model.h).

#include <gtest/gtest.h>

#include <algorithm>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

// The last arguments of jobs first..last in the order they started (`show --format json`).
std::vector<std::string> start_order(const NodusHome& home, int first, int last) {
  std::vector<std::pair<double, std::string>> started;
  for (int id = first; id <= last; ++id) {
    auto j = show_json(home, std::to_string(id));
    if (j["started_at"].is_number())
      started.push_back({j["started_at"].get<double>(), j["command"].back().get<std::string>()});
  }
  std::sort(started.begin(), started.end());
  std::vector<std::string> out;
  for (const auto& [t, arg] : started) out.push_back(arg);
  return out;
}

TEST(SweepOrder, ARepeatedSweepStartsTheLongestCellsFirst) {
  NodusHome home;
  // One cell at a time, so the start order is the order the scheduler chose.
  const std::vector<std::string> args = {"sweep",       "--parallel", "1",     "--param",
                                         "s=0,1.2,0.6", "--",         "sleep", "{s}"};
  auto first = home.run(args);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(start_order(home, 1, 3), (std::vector<std::string>{"0", "1.2", "0.6"}));  // grid order
  auto second = home.run(args);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(start_order(home, 4, 6), (std::vector<std::string>{"1.2", "0.6", "0"}));
  // Another command knows nothing of these durations: grid order.
  auto other = home.run(
      {"sweep", "--parallel", "1", "--param", "s=0,1.2,0.6", "--", "sh", "-c", "sleep $0", "{s}"});
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_EQ(start_order(home, 7, 9), (std::vector<std::string>{"0", "1.2", "0.6"}));
}

// Every long cell takes 24 times as long as a short one, whatever its k: once the ended cells
// show it, the long cells still waiting start before the short ones, and nodus says so. In grid
// order the last cell to start is a long one (k=6); here it is a short one.
TEST(SweepOrder, AFirstRunStartsTheCellsThatLookLongestFirstOnceTheEndedOnesTellWhich) {
  NodusHome home;
  auto r = home.run({"sweep", "--parallel", "2", "--param", "k=1..6", "--param", "size=0.05,1.2",
                     "--", "sh", "-c", "sleep \"$0\"", "{size}", "{k}"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("starts the cells that look longest first"), std::string::npos) << r.err;
  std::vector<std::pair<double, std::string>> started;  // (started_at, size)
  for (int id = 1; id <= 12; ++id) {
    auto j = show_json(home, std::to_string(id));
    ASSERT_TRUE(j["started_at"].is_number()) << j.dump();
    started.push_back({j["started_at"].get<double>(), j["command"][3].get<std::string>()});
  }
  std::sort(started.begin(), started.end());
  EXPECT_EQ(started.back().second, "0.05") << r.err;
}

// The same grid one cell at a time: the order cannot change how long the sweep takes, so it is
// the grid's, and nothing is said.
TEST(SweepOrder, OneCellAtATimeKeepsTheGridOrderAndSaysNothing) {
  NodusHome home;
  auto r = home.run({"sweep", "--parallel", "1", "--param", "k=1..3", "--param", "size=0,0.3", "--",
                     "sh", "-c", "sleep \"$0\"", "{size}", "{k}"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("look longest"), std::string::npos) << r.err;
  EXPECT_EQ(start_order(home, 1, 6), (std::vector<std::string>{"1", "1", "2", "2", "3", "3"}));
}

}  // namespace
}  // namespace nodus::testing
