#include "core/table.h"

#include <gtest/gtest.h>

namespace nodus {
namespace {

Table sample() {
  Table t({{"name", "NAME"}, {"cost", "COST", true}});
  t.add_row({"a,b", "$1.00"}, {{"name", "a,b"}, {"cost", 1.0}});
  t.add_row({"c|d", "$12.50"}, {{"name", "c|d"}, {"cost", 12.5}});
  t.mark(1);
  return t;
}

TEST(Table, TextAlignsAndMarks) {
  EXPECT_EQ(sample().render(Format::kTable),
            "  NAME    COST\n"
            "  a,b    $1.00\n"
            "* c|d   $12.50\n");
}

TEST(Table, CsvUsesRawValuesAndQuotes) {
  EXPECT_EQ(sample().render(Format::kCsv), "name,cost\n\"a,b\",1.0\nc|d,12.5\n");
}

TEST(Table, MarkdownEscapesPipes) {
  EXPECT_EQ(sample().render(Format::kMd),
            "| NAME | COST |\n| --- | ---: |\n| a,b | $1.00 |\n| **c\\|d** | **$12.50** |\n");
}

TEST(Table, JsonIsTheRawRows) {
  auto j = nlohmann::json::parse(sample().render(Format::kJson));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["cost"], 12.5);
}

TEST(ParseFormat, RejectsUnknown) { EXPECT_FALSE(parse_format("yaml").ok()); }

}  // namespace
}  // namespace nodus
