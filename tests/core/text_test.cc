#include "core/text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/table.h"

namespace nodus {
namespace {

TEST(Utf8, ValidatesWellFormedSequencesOnly) {
  EXPECT_TRUE(valid_utf8("plain"));
  EXPECT_TRUE(valid_utf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(valid_utf8("bad\xff"));
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(valid_utf8("\xE2\x82"));          // truncated
}

TEST(Utf8, ReplacesEachInvalidByte) {
  EXPECT_EQ(replace_invalid_utf8("a\xff"
                                 "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(replace_invalid_utf8("\xC3\xA9"), "\xC3\xA9");
}

TEST(EscapeControl, MakesControlsVisible) {
  EXPECT_EQ(escape_control("a\nb\tc\r"), "a\\nb\\tc\\r");
  EXPECT_EQ(escape_control("\x1b[31mred\x07"), "\\x1b[31mred\\x07");
  EXPECT_EQ(escape_control("\xC2\x9B"
                           "2J"),
            "\\u009b2J");
  EXPECT_EQ(escape_control("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(escape_control("x\xff"), "x\xEF\xBF\xBD");
}

TEST(TextProblem, NamesTheProblem) {
  EXPECT_EQ(text_problem("ok name"), "");
  EXPECT_EQ(text_problem("bad\xff"), "not valid UTF-8");
  EXPECT_EQ(text_problem("a\nb"), "contains a control character");
  EXPECT_EQ(text_problem("a\x7f"), "contains a control character");
}

TEST(TableEscaping, EveryFormatIsSafe) {
  Table t(std::vector<Column>{{"name", "NAME"}});
  t.add_row({"a\n\x1b[2Jb<img src=x>&\xff"}, {{"name", std::string("a\n\x1b[2Jb\xff")}});
  std::string text = t.render(Format::kTable);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  std::string md = t.render(Format::kMd);
  EXPECT_EQ(md.find("<img"), std::string::npos) << md;
  EXPECT_NE(md.find("&lt;img src=x&gt;&amp;"), std::string::npos) << md;
  std::string json = t.render(Format::kJson);
  EXPECT_NE(json.find("\xEF\xBF\xBD"), std::string::npos) << json;
  std::string csv = t.render(Format::kCsv);
  EXPECT_NE(csv.find("\xEF\xBF\xBD"), std::string::npos) << csv;
}

}  // namespace
}  // namespace nodus
