#include "core/table.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/text.h"

namespace nodus {

Result<Format> parse_format(std::string_view text) {
  if (text == "table") return Format::kTable;
  if (text == "json") return Format::kJson;
  if (text == "csv") return Format::kCsv;
  if (text == "md") return Format::kMd;
  return Error::permanent("--format: invalid value '" + std::string(text) +
                          "': expected table, json, csv or md");
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {
  raw_ = nlohmann::json::array();
}

const nlohmann::json& Table::raw(size_t row) const { return (*raw_)[row]; }

void Table::add_row(std::vector<std::string> text, nlohmann::json raw) {
  text.resize(columns_.size());
  // Display text is made safe once, here: a name with a newline or an escape sequence cannot
  // forge a row or drive the terminal, and widths are measured on what is printed.
  for (auto& cell : text) cell = escape_control(cell);
  text_.push_back(std::move(text));
  raw_->push_back(std::move(raw));
}

bool Table::is_marked(size_t row) const {
  return std::find(marked_.begin(), marked_.end(), row) != marked_.end();
}

std::string Table::render(Format format) const {
  switch (format) {
    case Format::kJson:
      // Rows written by older versions may hold invalid UTF-8: replace it rather than fail.
      return dump_json(raw_rows()) + "\n";
    case Format::kCsv:
      return render_csv();
    case Format::kMd:
      return render_md();
    case Format::kTable:
      break;
  }
  return render_text();
}

nlohmann::json Table::contract_row(size_t row) const {
  nlohmann::json out = nlohmann::json::object();
  const nlohmann::json& raw = (*raw_)[row];
  for (const auto& col : columns_) {
    auto it = raw.is_object() ? raw.find(col.key) : raw.end();
    out[col.key] = raw.is_object() && it != raw.end() ? *it : nlohmann::json();
  }
  out["schema_version"] = kSchemaVersion;
  return out;
}

nlohmann::json Table::raw_rows() const {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < raw_->size(); ++r) rows.push_back(contract_row(r));
  return rows;
}

std::vector<size_t> Table::shown_columns() const {
  std::vector<size_t> shown;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c].show == Show::kMachine) continue;
    if (columns_[c].show == Show::kIfAny &&
        std::none_of(text_.begin(), text_.end(),
                     [&](const auto& row) { return !row[c].empty() && row[c] != "-"; }))
      continue;
    shown.push_back(c);
  }
  return shown;
}

std::string Table::render_text() const {
  const std::vector<size_t> shown = shown_columns();
  std::vector<size_t> width(columns_.size());
  for (size_t c : shown) {
    width[c] = display_width(escape_control(columns_[c].header));
    for (const auto& row : text_) width[c] = std::max(width[c], display_width(row[c]));
  }
  bool any_mark = !marked_.empty();
  auto line = [&](const std::vector<std::string>& cells, bool marked) {
    std::string out = any_mark ? (marked ? "* " : "  ") : "";
    for (size_t i = 0; i < shown.size(); ++i) {
      size_t c = shown[i];
      std::string pad(width[c] - std::min(width[c], display_width(cells[c])), ' ');
      out += columns_[c].right ? pad + cells[c] : cells[c] + pad;
      if (i + 1 < shown.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> headers;
  for (const auto& col : columns_) headers.push_back(escape_control(col.header));
  std::string out = line(headers, false);
  for (size_t r = 0; r < text_.size(); ++r) out += line(text_[r], is_marked(r));
  return out;
}

std::string csv_escape(std::string_view raw) {
  std::string field = replace_invalid_utf8(raw);
  // A field a job controls (a metric's name, a note) never reaches a terminal as an escape
  // sequence, nor a spreadsheet as a formula: controls other than newlines and tabs are written
  // as escapes (\x1b), and a field starting with = + @ gets a leading ' (as OWASP advises).
  bool controls = false;
  for (size_t i = 0; i < field.size(); ++i) {
    const auto c = static_cast<unsigned char>(field[i]);
    if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7F ||
        (c == 0xC2 && i + 1 < field.size() && static_cast<unsigned char>(field[i + 1]) <= 0x9F))
      controls = true;
  }
  if (controls) field = escape_control(field);
  if (!field.empty() && (field[0] == '=' || field[0] == '+' || field[0] == '@'))
    field.insert(0, "'");
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string dump_json(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Table::render_csv() const {
  // Every declared column and schema_version, in every row; null is an empty field; arrays and
  // objects are their compact JSON text.
  std::string out;
  for (const auto& col : columns_) out += csv_escape(col.key) + ",";
  out += "schema_version\n";
  for (size_t r = 0; r < raw_->size(); ++r) {
    const nlohmann::json row = contract_row(r);
    for (const auto& col : columns_) {
      const auto& v = row[col.key];
      if (!v.is_null()) out += csv_escape(v.is_string() ? v.get<std::string>() : dump_json(v, -1));
      out += ",";
    }
    out += std::to_string(kSchemaVersion) + "\n";
  }
  return out;
}

std::string Table::render_md() const {
  // Cells are shown as typed: no extra table column, raw HTML or entity from user text.
  auto esc = [](const std::string& s) {
    std::string out;
    for (char c : escape_control(s)) {
      switch (c) {
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '&':
          out += "&amp;";
          break;
        case '|':
        case '\\':
          out += '\\';
          out += c;
          break;
        default:
          out += c;
      }
    }
    return out;
  };
  const std::vector<size_t> shown = shown_columns();
  std::string out = "|";
  for (size_t c : shown) out += " " + esc(columns_[c].header) + " |";
  out += "\n|";
  for (size_t c : shown) out += columns_[c].right ? " ---: |" : " --- |";
  out += "\n";
  for (size_t r = 0; r < text_.size(); ++r) {
    out += "|";
    for (size_t c : shown) {
      std::string v = esc(text_[r][c]);
      out += " " + (is_marked(r) && !v.empty() ? "**" + v + "**" : v) + " |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace nodus
