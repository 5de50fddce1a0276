// A repeated sweep starts its longest cells first (engine/cell_order.h): the second run of the
// same command knows each cell's duration from the first.

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

}  // namespace
}  // namespace nodus::testing
