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

#include <cstdio>
#include <functional>
#include <memory>
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
  bool is_marked(size_t row) const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> text_;
  JsonValue raw_;  // a JSON array: one object per row
  std::vector<size_t> marked_;
};

// Writes a listing row by row, so that memory stays flat in the number of rows (`ps -a` over a
// store of 100k jobs). table and md need the whole listing first: its column widths, and which
// kIfAny columns have a value. For those formats (measures()), the caller hands every row to
// measure() in a first pass, then the same rows in the same order to write(); json and csv need no
// first pass. Whatever is written goes to `sink` as it is made. Table::render is this writer fed
// from memory, so a listing prints the same bytes either way.
//
// A caller whose rows are dear to read twice (a store's 100k jobs) can ask the writer to keep
// them instead (keep_measured_rows): each row measure() is handed is also written, as it will
// show, to an unlinked temporary file, and finish() prints the rows from there. Then every
// format takes one pass (passes()), and memory stays flat all the same.
class TableWriter {
 public:
  using Sink = std::function<void(std::string_view)>;
  TableWriter(std::vector<Column> columns, Format format, Sink sink);
  ~TableWriter();
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;

  bool measures() const { return format_ == Format::kTable || format_ == Format::kMd; }
  // For table and md, keeps the measured rows in a temporary file in $TMPDIR (else /tmp), made
  // unlinked (O_TMPFILE, or mkstemp and unlink). False, keeping nothing, for json and csv, or
  // when no such file can be made: the caller then hands its rows over twice, as above. Call it
  // before the first row.
  bool keep_measured_rows();
  // How many times the caller hands over its rows: 2 for table and md (measure, then write)
  // unless the measured rows are kept; 1 otherwise.
  int passes() const { return measures() && !spool_ ? 2 : 1; }
  bool wants_text() const { return measures(); }  // table, md: display text; json, csv: raw
  void measure(std::vector<std::string> text, bool marked = false);
  // text: as for Table::add_row; raw: the row's JSON object (json, csv; null otherwise).
  void write(std::vector<std::string> text, const nlohmann::json& raw, bool marked = false);
  // json, csv: the row as its values, one per column in the columns' order (a null where it has
  // none): what write() prints for a raw object holding them under the columns' keys (distinct
  // keys, as a listing's are), without building that object.
  void write_values(const std::vector<nlohmann::json>& values);
  // The header of an empty table, the kept rows (keep_measured_rows), the end of the json array.
  // Throws Fatal when the kept rows cannot be read back (the temporary file's disk filled).
  void finish();

 private:
  void start();  // the header, before the first row
  void write_kept_rows();
  std::vector<size_t> shown_columns() const;
  std::string text_line(const std::vector<std::string>& cells, bool marked) const;
  std::string md_line(const std::vector<std::string>& cells, bool marked) const;

  std::vector<Column> columns_;
  Format format_;
  Sink sink_;
  std::vector<size_t> width_;    // per column, from measure()
  std::vector<bool> has_value_;  // per column: some row's text is neither "" nor "-"
  std::vector<size_t> shown_;
  struct JsonOut;  // one serializer for every value the listing prints (json, csv)
  JsonOut& json_out();
  std::unique_ptr<JsonOut> json_out_;
  std::FILE* spool_ = nullptr;  // the kept rows (keep_measured_rows), or null
  size_t kept_ = 0;             // rows written to spool_
  bool any_mark_ = false;
  bool started_ = false;
  size_t rows_ = 0;
};

std::string csv_escape(std::string_view field);

// JSON text for stdout: bytes that are not valid UTF-8 (rows written by older versions) become
// U+FFFD instead of failing the whole listing.
std::string dump_json(const nlohmann::json& value, int indent = 2);

}  // namespace nodus
