#include "core/json_input.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nodus {
namespace {

std::string nested(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(JsonInput, RefusesNestingPastTheLimitAtTheBracketThatPassesIt) {
  EXPECT_FALSE(json_too_deep_at(nested(64)));
  EXPECT_EQ(json_too_deep_at(nested(65)), 64u);
  EXPECT_EQ(json_too_deep_at(" {\"a\": " + nested(64) + "}"), 70u);
  EXPECT_TRUE(json_too_deep_at(nested(100000)));
  // Siblings do not add up; only open levels count.
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i) wide += nested(60) + ",";
  EXPECT_FALSE(json_too_deep_at(wide + "1]"));
}

TEST(JsonInput, BracketsInsideStringsAreText) {
  EXPECT_FALSE(json_too_deep_at("[\"" + nested(100) + "\"]"));
  EXPECT_FALSE(json_too_deep_at("[\"\\\"" + nested(100) + "\"]"));  // an escaped quote
  EXPECT_TRUE(json_too_deep_at("[\"\\\\\"" + nested(100) + "]"));   // an escaped backslash
}

TEST(JsonInput, ParseUntrustedDiscardsBombsAndKeepsTheRest) {
  EXPECT_TRUE(parse_untrusted_json(nested(200000)).is_discarded());
  EXPECT_TRUE(parse_untrusted_json<nlohmann::ordered_json>(nested(65)).is_discarded());
  EXPECT_TRUE(parse_untrusted_json("{").is_discarded());
  EXPECT_EQ(parse_untrusted_json(R"({"a": [1, 2]})")["a"][1], 2);
  EXPECT_EQ(parse_untrusted_json(nested(64)).size(), 1u);
  EXPECT_EQ(json_depth_words(), "nested deeper than 64 levels (the limit)");
}

}  // namespace
}  // namespace nodus
