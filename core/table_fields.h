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
Table make_table(const std::vector<Field<Row>>& fields, const std::vector<Row>& rows) {
  std::vector<Column> columns;
  for (const auto& f : fields) columns.push_back(f.column);
  Table table(std::move(columns));
  for (const auto& row : rows) {
    std::vector<std::string> text;
    nlohmann::json raw = nlohmann::json::object();
    for (const auto& f : fields) {
      text.push_back(f.text ? f.text(row) : std::string());
      raw[f.column.key] = f.value(row);
    }
    table.add_row(std::move(text), std::move(raw));
  }
  return table;
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
