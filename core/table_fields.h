#pragma once
// Listings declared as fields (make_table) and or_null: apart from core/table.h, as they need
// <nlohmann/json.hpp>, which only the files that build a listing should parse.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/table.h"

namespace nodus {

// A listing declared once: each Field is a column with how a row shows in it (text) and what
// json/csv carry (value). Adding a column to a listing is adding one Field.
template <class Row>
struct Field {
  Column column;
  std::function<std::string(const Row&)> text;
  std::function<nlohmann::json(const Row&)> value;
};

template <class Row>
std::vector<Column> columns_of(const std::vector<Field<Row>>& fields) {
  std::vector<Column> columns;
  for (const auto& f : fields) columns.push_back(f.column);
  return columns;
}

template <class Row>
std::vector<std::string> texts_of(const std::vector<Field<Row>>& fields, const Row& row) {
  std::vector<std::string> text;
  for (const auto& f : fields) text.push_back(f.text ? f.text(row) : std::string());
  return text;
}

template <class Row>
nlohmann::json values_of(const std::vector<Field<Row>>& fields, const Row& row) {
  nlohmann::json raw = nlohmann::json::object();
  for (const auto& f : fields) raw[f.column.key] = f.value(row);
  return raw;
}

// The row's values, one per field in order (TableWriter::write_values).
template <class Row>
std::vector<nlohmann::json> values_in_order(const std::vector<Field<Row>>& fields, const Row& row) {
  std::vector<nlohmann::json> values;
  values.reserve(fields.size());
  for (const auto& f : fields) values.push_back(f.value(row));
  return values;
}

template <class Row>
Table make_table(const std::vector<Field<Row>>& fields, const std::vector<Row>& rows) {
  Table table(columns_of(fields));
  for (const auto& row : rows) table.add_row(texts_of(fields, row), values_of(fields, row));
  return table;
}

// One row to a TableWriter on the pass it is on (0: measure, when it measures; then write),
// building only what that pass needs: display text for table and md, raw values for json, csv.
template <class Row>
void feed_row(TableWriter& writer, const std::vector<Field<Row>>& fields, int pass,
              const Row& row) {
  if (pass == 0 && writer.measures())
    writer.measure(texts_of(fields, row));
  else if (writer.wants_text())
    writer.write(texts_of(fields, row), nlohmann::json());
  else
    writer.write_values(values_in_order(fields, row));
}

// null for an empty optional or string, else the value: absent values are null in json.
template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
inline nlohmann::json or_null(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

}  // namespace nodus
