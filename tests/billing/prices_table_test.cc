#include "billing/prices_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nodus::billing {
namespace {

TEST(PricesTable, OneRowPerTypeWithRawValuesForJson) {
  Catalog c = Catalog::builtin();
  Table t = prices_table(c);
  ASSERT_EQ(t.size(), c.entries().size());
  std::vector<std::string> headers;
  for (const auto& col : t.columns()) headers.push_back(col.header);
  EXPECT_EQ(headers, (std::vector<std::string>{"TYPE", "ALIASES", "$/GPU-HOUR", "SOURCE",
                                               "SOURCE URL", "CHECKED", "VIA", "NOTE", "ORIGIN"}));
  const auto& row = t.raw(0);
  EXPECT_EQ(row["type"], "H100-SXM");
  EXPECT_TRUE(row["aliases"].is_array());
  EXPECT_EQ(row["aliases"][0], "H100");
  EXPECT_DOUBLE_EQ(row["usd_per_gpu_hour"].get<double>(), 2.60);
  EXPECT_EQ(row["source"], "Nodus GPU cloud pricing page");  // named: it has no public URL
  EXPECT_TRUE(row["source_url"].is_null());
  EXPECT_EQ(row["checked"], "2026-11-06");
  EXPECT_EQ(row["origin"], "built-in");
  EXPECT_EQ(t.raw(1)["source_url"], "https://lambda.ai/instances");
}

TEST(PricesTable, EveryBuiltInEntryNamesItsSourceAndTheDateItWasChecked) {
  for (const auto& e : Catalog::builtin().entries()) {
    EXPECT_FALSE(e.source.empty()) << e.type;
    EXPECT_NE(e.source, "none") << e.type;  // a rate with no named source is not one to bill by
    EXPECT_TRUE(!e.source_url().empty() || e.note.find("no public URL") != std::string::npos)
        << e.type << ": " << e.source;
    EXPECT_EQ(e.checked.size(), 10u) << e.type;
  }
}

TEST(PricesTable, TableTextShowsTheRateAsStated) {
  std::string text = prices_table(Catalog::builtin()).render(Format::kTable);
  EXPECT_NE(text.find("$2.60"), std::string::npos) << text;
  EXPECT_NE(text.find("H100, H100-80GB, H100-SXM5"), std::string::npos) << text;
}

TEST(FormatRate, KeepsCentsAndUpToFourDecimals) {
  EXPECT_EQ(format_rate(2.6), "$2.60");
  EXPECT_EQ(format_rate(4.5396), "$4.5396");
  EXPECT_EQ(format_rate(0.7992), "$0.7992");
  EXPECT_EQ(format_rate(1.25), "$1.25");
  EXPECT_EQ(format_rate(0), "$0.00");
  EXPECT_EQ(format_rate(3.105), "$3.105");
}

}  // namespace
}  // namespace nodus::billing
