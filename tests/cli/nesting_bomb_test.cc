// Issue 28: a 200 KB file of nested brackets, under every size limit, must be refused with one
// line naming the file and the depth limit (exit 125), not parsed into gigabytes and a crash.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

std::string bomb(const std::string& open, const std::string& close, size_t bytes) {
  std::string out;
  size_t n = bytes / (open.size() + close.size());
  out.reserve(bytes);
  for (size_t i = 0; i < n; ++i) out += open;
  for (size_t i = 0; i < n; ++i) out += close;
  return out;
}

void expect_refused(const RunResult& r, const std::string& file) {
  EXPECT_EQ(r.code, 125) << r.err;
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("deeper than 64 levels"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(NestingBomb, PriceCatalogOfNestedBracketsIsRefused) {
  NodusHome home;
  for (auto [open, close] : {std::pair{"[", "]"}, std::pair{"{\"a\":", "}"}}) {
    std::string f = home.file("prices.json");
    write_file(f, bomb(open, close, 200 << 10));
    expect_refused(home.run({"prices", "--prices", f}), f);
    expect_refused(home.run({"prices"}, {{"NODUS_PRICES", f}}), f);
  }
}

TEST(NestingBomb, CatalogJustWithinTheLimitIsReadAsUsual) {
  NodusHome home;
  std::string f = home.file("prices.json");
  // 64 levels: the object, "gpus", the entry, "note"'s 61 nested lists... refused as a wrong
  // type, not as too deep.
  std::string note = bomb("[", "]", 2 * 61);
  write_file(f, R"({"gpus": [{"type": "X1", "usd_per_gpu_hour": 1, "note": )" + note + "}]}");
  auto r = home.run({"prices", "--prices", f});
  EXPECT_EQ(r.code, 125);
  EXPECT_EQ(r.err.find("deeper than"), std::string::npos) << r.err;
}

TEST(NestingBomb, SpecFileOfNestedSequencesIsRefusedAndRunsNothing) {
  NodusHome home;
  std::string f = home.file("job.yaml");
  for (const std::string& text :
       {"command: " + bomb("[", "]", 200 << 10) + "\n", "name: " + bomb("{a: ", "}", 200 << 10),
        "command: [echo, " + bomb("[", "]", 2 * 100) + "]\n"}) {
    write_file(f, text);
    auto r = home.run({"run", "-f", f});
    EXPECT_EQ(r.code, 125) << r.err;
    EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("deeper than"), std::string::npos) << r.err;
    r = home.run({"sweep", "-f", f});
    EXPECT_EQ(r.code, 125) << r.err;
  }
  EXPECT_EQ(nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out).size(), 0u);
}

}  // namespace
}  // namespace nodus::testing
