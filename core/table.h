#pragma once
// Table is what every listing command builds; render() prints it as table, json, csv or md.
// Each row carries display text (table, md) and a JSON object of raw values (json, csv), so
// machine formats never see "$1.23" or "2m03s" but the numbers behind them.
//
// The declared columns are the output contract (docs/output.md): json and csv carry exactly the
// declared keys, every one in every row (an absent value is null in json, an empty field in
// csv), plus schema_version. A column never comes and goes with the data; only the
// human formats (table, md) may leave out a column that is empty in every row (Show::kIfAny)
// or a machine-only one (Show::kMachine).

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_value.h"
#include "core/result.h"

namespace nodus {

enum class Format { kTable, kJson, kCsv, kMd };
Result<Format> parse_format(std::string_view text);

// Version of the json/csv contract in docs/output.md. Bump it when a key changes meaning, type
// or unit, or is removed; adding a column does not bump it.
inline constexpr int kSchemaVersion = 2;  // docs/output.md says what each version changed

// Where a column shows in the human formats; json and csv always carry every column.
enum class Show {
  kAlways,   // table and md
  kIfAny,    // table and md only when some row has a value (text neither "" nor "-")
  kMachine,  // json and csv only (nested values, flags a table marks another way)
};

struct Column {
  std::string key;     // key in the JSON row object, and the CSV header
  std::string header;  // header shown in table and md
  bool right = false;  // right-align (numbers)
  Show show = Show::kAlways;
};

class Table {
 public:
  explicit Table(std::vector<Column> columns);
  // text: one display string per column, in order (missing trailing ones are ""); raw: the
  // JSON values for json/csv, by column key. Keys raw lacks are null; keys no column declares
  // are not printed (declare the column: that is the contract).
  void add_row(std::vector<std::string> text, nlohmann::json raw);
  // Marks a row (0-based) as highlighted: table output prefixes it with '*', md with bold.
  void mark(size_t row) { marked_.push_back(row); }

  const std::vector<Column>& columns() const { return columns_; }
  size_t size() const { return text_.size(); }
  const nlohmann::json& raw(size_t row) const;
  // The rows as json and csv print them: every declared key, null where absent, and
  // schema_version.
  nlohmann::json raw_rows() const;
  nlohmann::json contract_row(size_t row) const;

  std::string render(Format format) const;

 private:
  std::string render_text() const;
  std::string render_csv() const;
  std::string render_md() const;
  bool is_marked(size_t row) const;
  std::vector<size_t> shown_columns() const;  // indices of the columns table and md print

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> text_;
  JsonValue raw_;  // a JSON array: one object per row
  std::vector<size_t> marked_;
};

std::string csv_escape(std::string_view field);

// JSON text for stdout: bytes that are not valid UTF-8 (rows written by older versions) become
// U+FFFD instead of failing the whole listing.
std::string dump_json(const nlohmann::json& value, int indent = 2);

}  // namespace nodus
