// The one line splitter (core/line_splitter.h) that the job's output, the Slurm output follower
// and the nvidia-smi sampler share.

#include "core/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nodus {
namespace {

TEST(LineSplitter, KeepsAPartialLineUntilItsNewline) {
  LineSplitter s;
  std::vector<std::string> lines;
  LineFn f = [&](std::string_view l) { lines.emplace_back(l); };
  s.feed("ab", f);
  s.feed("c\nde", f);
  EXPECT_EQ(lines, std::vector<std::string>{"abc"});
  s.feed("\n\n", f);
  EXPECT_EQ(lines, (std::vector<std::string>{"abc", "de", ""}));
  s.finish(f);
  EXPECT_EQ(lines.size(), 3u);
}

TEST(LineSplitter, ALineLongerThanTheBoundIsDeliveredInPieces) {
  LineSplitter s(8);
  std::vector<std::string> lines;
  LineFn f = [&](std::string_view l) { lines.emplace_back(l); };
  s.feed("0123456789abcdefXY", f);
  EXPECT_EQ(lines, (std::vector<std::string>{"01234567", "89abcdef"}));
  s.feed("Z\n", f);
  EXPECT_EQ(lines.back(), "XYZ");
  s.feed("tail", f);
  s.finish(f);
  EXPECT_EQ(lines.back(), "tail");
}

TEST(LineSplitter, DefaultBoundIs64KiB) {
  LineSplitter s;
  std::vector<size_t> sizes;
  LineFn f = [&](std::string_view l) { sizes.push_back(l.size()); };
  s.feed(std::string(200 * 1024, 'x'), f);
  ASSERT_EQ(sizes.size(), 3u);
  for (size_t n : sizes) EXPECT_EQ(n, 64u * 1024);
}

TEST(LineSplitter, ClearDropsThePartialLine) {
  LineSplitter s;
  std::vector<std::string> lines;
  LineFn f = [&](std::string_view l) { lines.emplace_back(l); };
  s.feed("old-part", f);
  s.clear();
  s.feed("new\n", f);
  EXPECT_EQ(lines, std::vector<std::string>{"new"});
}

}  // namespace
}  // namespace nodus
