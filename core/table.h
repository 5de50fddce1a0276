#pragma once
// Table is what every listing command builds; render() prints it as table, json, csv or md.
// Each row carries display text (table, md) and a JSON object of raw values (json, csv), so
// machine formats never see "$1.23" or "2m03s" but the numbers behind them.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace nodus {

enum class Format { kTable, kJson, kCsv, kMd };
Result<Format> parse_format(std::string_view text);

struct Column {
  std::string key;     // key in the JSON row object, and the CSV header
  std::string header;  // header shown in table and md
  bool right = false;  // right-align (numbers)
};

class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // text: one display string per column; raw: the JSON object for json/csv output.
  void add_row(std::vector<std::string> text, nlohmann::json raw);
  // Marks a row (0-based) as highlighted: table output prefixes it with '*', md with bold.
  void mark(size_t row) { marked_.push_back(row); }

  const std::vector<Column>& columns() const { return columns_; }
  size_t size() const { return text_.size(); }
  const nlohmann::json& raw(size_t row) const { return raw_[row]; }
  nlohmann::json raw_rows() const { return raw_; }

  std::string render(Format format) const;

 private:
  std::string render_text() const;
  std::string render_csv() const;
  std::string render_md() const;
  bool is_marked(size_t row) const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> text_;
  nlohmann::json raw_ = nlohmann::json::array();
  std::vector<size_t> marked_;
};

std::string csv_escape(std::string_view field);

// JSON text for stdout: bytes that are not valid UTF-8 (rows written by older versions) become
// U+FFFD instead of failing the whole listing.
std::string dump_json(const nlohmann::json& value, int indent = 2);

}  // namespace nodus
