#include "core/table.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/table_fields.h"

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
  EXPECT_EQ(sample().render(Format::kCsv), "name,cost,schema_version\n\"a,b\",1.0,2\nc|d,12.5,2\n");
}

TEST(Table, CsvNeverCarriesTerminalEscapesOrFormulas) {
  EXPECT_EQ(csv_escape("loss\x1b[2J"), "loss\\x1b[2J");
  EXPECT_EQ(csv_escape("a\xc2\x9b"
                       "31m"),
            "a\\u009b31m");
  EXPECT_EQ(csv_escape("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
  EXPECT_EQ(csv_escape("+1"), "'+1");
  EXPECT_EQ(csv_escape("@cmd"), "'@cmd");
  EXPECT_EQ(csv_escape("-1"), "-1");
  EXPECT_EQ(csv_escape("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_escape("<script>"), "<script>") << "csv is data: html escaping is md's and html's";
}

TEST(Table, TextAlignsByDisplayWidthNotBytes) {
  Table t({{"name", "NAME"}, {"n", "N", true}});
  t.add_row({"\xe6\xb7\xb1\xe5\xb1\xa4", "1"}, {});  // two wide characters: 4 columns, 6 bytes
  t.add_row({"caf\xc3\xa9", "22"}, {});              // 4 columns, 5 bytes
  t.add_row({"abcd", "333"}, {});
  EXPECT_EQ(t.render(Format::kTable),
            "NAME    N\n"
            "\xe6\xb7\xb1\xe5\xb1\xa4    1\n"
            "caf\xc3\xa9   22\n"
            "abcd  333\n");
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

TEST(Table, EveryDeclaredColumnInEveryMachineRowNullWhenAbsentUndeclaredKeysDropped) {
  Table t({{"a", "A"}, {"b", "B"}, {"c", "C", false, Show::kMachine}});
  t.add_row({"1", "-"}, {{"a", 1}, {"extra", true}});  // no b, no c
  auto j = nlohmann::json::parse(t.render(Format::kJson));
  EXPECT_EQ(j[0],
            (nlohmann::json{{"a", 1}, {"b", nullptr}, {"c", nullptr}, {"schema_version", 2}}));
  EXPECT_EQ(t.render(Format::kCsv), "a,b,c,schema_version\n1,,,2\n");
  EXPECT_EQ(t.render(Format::kTable), "A  B\n1  -\n");  // machine-only c never in the table
}

TEST(Table, AnIfAnyColumnShowsOnlyWhenSomeRowHasAValue) {
  Table empty({{"a", "A"}, {"u", "UTIL", true, Show::kIfAny}});
  empty.add_row({"x", "-"}, {{"a", "x"}});
  EXPECT_EQ(empty.render(Format::kTable), "A\nx\n");
  EXPECT_EQ(empty.render(Format::kMd), "| A |\n| --- |\n| x |\n");
  EXPECT_EQ(empty.render(Format::kCsv), "a,u,schema_version\nx,,2\n");
  Table some({{"a", "A"}, {"u", "UTIL", true, Show::kIfAny}});
  some.add_row({"x", "-"}, {{"a", "x"}});
  some.add_row({"y", "40"}, {{"a", "y"}, {"u", 0.4}});
  EXPECT_EQ(some.render(Format::kTable), "A  UTIL\nx     -\ny    40\n");
}

TEST(Table, FieldsDeclareAListingOnce) {
  struct Row {
    std::string name;
    std::optional<double> v;
  };
  std::vector<Field<Row>> fields = {
      {{"name", "NAME"},
       [](const Row& r) { return r.name; },
       [](const Row& r) { return or_null(r.name); }},
      {{"v", "V", true},
       [](const Row& r) { return r.v ? std::to_string(int(*r.v)) : "-"; },
       [](const Row& r) { return or_null(r.v); }},
  };
  Table t = make_table(fields, std::vector<Row>{{"", 2.0}, {"b", std::nullopt}});
  EXPECT_EQ(t.render(Format::kCsv), "name,v,schema_version\n,2.0,2\nb,,2\n");
  auto j = nlohmann::json::parse(t.render(Format::kJson));
  EXPECT_TRUE(j[0]["name"].is_null());  // "" is null: absent, one type
  EXPECT_TRUE(j[1]["v"].is_null());
}

// Every format, streamed row by row through a TableWriter (measuring first where it measures),
// prints the bytes the whole Table renders.
TEST(TableWriter, StreamedRowsPrintTheBytesOfTheWholeTable) {
  struct Row {
    std::string name;
    std::optional<double> v;
    std::vector<int> gpus;
  };
  std::vector<Field<Row>> fields = {
      {{"name", "NAME"},
       [](const Row& r) { return r.name; },
       [](const Row& r) { return or_null(r.name); }},
      {{"v", "V", true},
       [](const Row& r) { return r.v ? std::to_string(int(*r.v)) : "-"; },
       [](const Row& r) { return or_null(r.v); }},
      {{"u", "UTIL", true, Show::kIfAny}, [](const Row&) { return "-"; }, nullptr},
      {{"gpus", "GPUS", false, Show::kMachine},
       nullptr,
       [](const Row& r) { return nlohmann::json(r.gpus); }},
  };
  fields[2].value = [](const Row&) { return nlohmann::json(); };
  const std::vector<Row> rows = {{"\xe6\xb7\xb1\xe5\xb1\xa4", 2.0, {0, 3}},
                                 {"a|b\x1b[2J", std::nullopt, {}},
                                 {"=SUM(A1)", 12.0, {7}}};
  const Table whole = make_table(fields, rows);
  for (Format f : {Format::kTable, Format::kJson, Format::kCsv, Format::kMd}) {
    std::string streamed;
    TableWriter writer(columns_of(fields), f, [&](std::string_view s) { streamed += s; });
    for (int pass = writer.measures() ? 0 : 1; pass < 2; ++pass)
      for (const Row& r : rows) feed_row(writer, fields, writer.measures() ? pass : 1, r);
    writer.finish();
    EXPECT_EQ(streamed, whole.render(f)) << "format " << static_cast<int>(f);
  }
  // The whole array as nlohmann prints it, nested values included.
  EXPECT_EQ(whole.render(Format::kJson), dump_json(whole.raw_rows()) + "\n");
}

// json and csv print each value through one serializer kept for the listing, member by member:
// the bytes nlohmann prints for the whole array (json) and for each value (csv), whatever the
// values: nested, empty, numbers of every kind, strings to escape, invalid UTF-8, keys out of
// order, a column named schema_version (the contract's own value wins), two columns of one key
// (the last one's value, as a raw object built column by column holds).
TEST(TableWriter, ValuesPrintAsNlohmannPrintsTheContractRows) {
  std::vector<Column> columns = {{"zeta", "Z"},           {"Alpha", "A"},  {"_u", "U"},
                                 {"schema_version", "S"}, {"nested", "N"}, {"b", "B"},
                                 {"a b", "AB"},           {"b", "B again"}};
  const std::vector<std::vector<nlohmann::json>> rows = {
      {1.5, "plain", nullptr, 7, nlohmann::json::array({"a", 1, nullptr}), true, 1e20, "b again"},
      {0.1, "q\"uo\\te\n\x01", -3, "x", nlohmann::json::object({{"k", {1, 2}}, {"j", {}}}), false,
       -0.0, 2},
      {nullptr, "\xff\xfe bad \xe6\xb7\xb1", 1234567890123LL, nullptr, nlohmann::json::array(),
       nlohmann::json::object(), 2.0, nullptr},
      {3, "=SUM(A1),\"x\"", 18446744073709551615ULL, 1,
       nlohmann::json::array({nlohmann::json::array()}), "", 1.7976931348623157e308, false}};
  Table whole(columns);
  for (const auto& r : rows) {
    nlohmann::json raw = nlohmann::json::object();
    for (size_t c = 0; c < columns.size(); ++c) raw[columns[c].key] = r[c];
    whole.add_row({}, raw);
  }
  std::string json, csv;
  TableWriter json_writer(columns, Format::kJson, [&](std::string_view s) { json += s; });
  TableWriter csv_writer(columns, Format::kCsv, [&](std::string_view s) { csv += s; });
  for (const auto& r : rows) {
    json_writer.write_values(r);
    csv_writer.write_values(r);
  }
  json_writer.finish();
  csv_writer.finish();
  EXPECT_EQ(json, dump_json(whole.raw_rows()) + "\n");
  // csv as printed before the serializer was kept: each contract value's own dump.
  std::string expected;
  for (const auto& col : columns) expected += col.key + ",";
  expected += "schema_version\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    const nlohmann::json row = whole.contract_row(r);
    for (const auto& col : columns) {
      const auto& v = row[col.key];
      if (!v.is_null())
        expected += csv_escape(v.is_string() ? v.get<std::string>() : dump_json(v, -1));
      expected += ",";
    }
    expected += std::to_string(kSchemaVersion) + "\n";
  }
  EXPECT_EQ(csv, expected);
  EXPECT_EQ(whole.render(Format::kCsv), expected);
}

// A writer that keeps its measured rows (one pass) prints the same bytes as the whole Table,
// marked rows and cells that need escaping included; json and csv keep nothing (one pass anyway).
TEST(TableWriter, KeptRowsPrintTheBytesOfTheWholeTable) {
  std::vector<Column> columns = {
      {"name", "NAME"}, {"v", "V", true}, {"u", "U", false, Show::kIfAny}};
  const std::vector<std::vector<std::string>> rows = {{"\xe6\xb7\xb1\xe5\xb1\xa4", "2", "-"},
                                                      {"a|b\x1b[2J\x1f\nnext", "", "-"},
                                                      {"", "12345", "x"},
                                                      {"=SUM(A1)", "-", ""}};
  Table whole(columns);
  for (const auto& r : rows) whole.add_row(r, nlohmann::json::object());
  whole.mark(1);
  for (Format f : {Format::kTable, Format::kMd, Format::kJson, Format::kCsv}) {
    std::string out;
    TableWriter writer(columns, f, [&](std::string_view s) { out += s; });
    const bool kept = writer.keep_measured_rows();
    EXPECT_EQ(kept, writer.measures()) << "format " << static_cast<int>(f);
    EXPECT_EQ(writer.passes(), 1);
    if (!kept) continue;
    for (size_t r = 0; r < rows.size(); ++r) writer.measure(rows[r], r == 1);
    writer.finish();
    EXPECT_EQ(out, whole.render(f)) << "format " << static_cast<int>(f);
  }
}

// Where no temporary file can be made, the writer says so and asks for two passes.
TEST(TableWriter, WithoutATemporaryFileTheRowsComeTwice) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  setenv("TMPDIR", "/nonexistent/nodus-table-test", 1);
  TableWriter writer({{"a", "A"}}, Format::kTable, [](std::string_view) {});
  EXPECT_FALSE(writer.keep_measured_rows());
  EXPECT_EQ(writer.passes(), 2);
  if (old)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
}

TEST(TableWriter, AnEmptyListingIsItsHeaderOrAnEmptyArray) {
  auto empty = [](Format f) {
    std::string out, kept;
    TableWriter writer({{"a", "A"}, {"b", "B", true}}, f, [&](std::string_view s) { out += s; });
    writer.finish();
    TableWriter keeping({{"a", "A"}, {"b", "B", true}}, f, [&](std::string_view s) { kept += s; });
    keeping.keep_measured_rows();
    keeping.finish();
    EXPECT_EQ(kept, out);
    return out;
  };
  EXPECT_EQ(empty(Format::kTable), "A  B\n");
  EXPECT_EQ(empty(Format::kJson), "[]\n");
  EXPECT_EQ(empty(Format::kCsv), "a,b,schema_version\n");
  EXPECT_EQ(empty(Format::kMd), "| A | B |\n| --- | ---: |\n");
}

TEST(ParseFormat, RejectsUnknown) { EXPECT_FALSE(parse_format("yaml").ok()); }

}  // namespace
}  // namespace nodus
