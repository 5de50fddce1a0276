#include "core/table.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
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
  text_.push_back(std::move(text));
  raw_->push_back(std::move(raw));
}

bool Table::is_marked(size_t row) const {
  return std::find(marked_.begin(), marked_.end(), row) != marked_.end();
}

std::string Table::render(Format format) const {
  std::string out;
  TableWriter writer(columns_, format, [&](std::string_view s) { out += s; });
  if (writer.measures())
    for (size_t r = 0; r < text_.size(); ++r) writer.measure(text_[r], is_marked(r));
  static const nlohmann::json kNone;
  for (size_t r = 0; r < text_.size(); ++r)
    writer.write(writer.wants_text() ? text_[r] : std::vector<std::string>{},
                 writer.wants_text() ? kNone : (*raw_)[r], is_marked(r));
  writer.finish();
  return out;
}

namespace {

// Every declared key, null where the row lacks it, and schema_version: what json and csv carry.
nlohmann::json contract_of(const std::vector<Column>& columns, const nlohmann::json& raw) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& col : columns) {
    auto it = raw.is_object() ? raw.find(col.key) : raw.end();
    out[col.key] = raw.is_object() && it != raw.end() ? *it : nlohmann::json();
  }
  out["schema_version"] = kSchemaVersion;
  return out;
}

// Markdown cells are shown as typed: no extra table column, raw HTML or entity from user text.
std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
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
}

// Display text is made safe once, before it is measured or printed: a name with a newline or an
// escape sequence cannot forge a row or drive the terminal, and widths are those of what prints.
std::vector<std::string> safe_cells(std::vector<std::string> text, size_t columns) {
  text.resize(columns);
  for (auto& cell : text) cell = escape_control(cell);
  return text;
}

}  // namespace

nlohmann::json Table::contract_row(size_t row) const { return contract_of(columns_, (*raw_)[row]); }

nlohmann::json Table::raw_rows() const {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < raw_->size(); ++r) rows.push_back(contract_row(r));
  return rows;
}

TableWriter::TableWriter(std::vector<Column> columns, Format format, Sink sink)
    : columns_(std::move(columns)),
      format_(format),
      sink_(std::move(sink)),
      width_(columns_.size()),
      has_value_(columns_.size()) {}

// nlohmann's own serializer, kept for the whole listing: json::dump() makes one (and its
// buffers) per call, which at every value of 100k rows costs more than the printing. The row
// is printed as dump_json(contract_of(...)) would print it, member by member: keys in the order
// of nlohmann's objects (std::less on the key), values through the same serializer with the
// same indentation and the same replacement of invalid UTF-8.
struct TableWriter::JsonOut {
  std::string text;  // what the serializer writes
  nlohmann::detail::serializer<nlohmann::json> serializer{
      nlohmann::detail::output_adapter<char, std::string>(text), ' ',
      nlohmann::json::error_handler_t::replace};
  // json: the row's members in print order: the key as JSON text, and its column (-1:
  // schema_version, which contract_of sets last, over any column of that key).
  std::vector<std::pair<std::string, int>> members;

  // Per column, the column whose value it prints: the last one of its key, as a raw object
  // built column by column (values_of) holds under a key two columns share.
  std::vector<size_t> source;

  explicit JsonOut(const std::vector<Column>& columns) {
    std::map<std::string, int> last;  // key -> its last column, in nlohmann's key order
    for (size_t c = 0; c < columns.size(); ++c) last[columns[c].key] = static_cast<int>(c);
    for (const auto& col : columns) source.push_back(static_cast<size_t>(last[col.key]));
    last["schema_version"] = -1;
    for (const auto& [key, column] : last) {
      text.clear();
      serializer.dump(nlohmann::json(key), false, false, 0);
      members.emplace_back(text, column);
    }
  }
  // `value` as dump_json(value, -1) prints it, or as a member of a row in a json listing.
  const std::string& dump(const nlohmann::json& value, bool in_row) {
    text.clear();
    if (in_row)
      serializer.dump(value, true, false, 2, 4);
    else
      serializer.dump(value, false, false, 0);
    return text;
  }
};

TableWriter::~TableWriter() {
  if (spool_) std::fclose(spool_);
}

TableWriter::JsonOut& TableWriter::json_out() {
  if (!json_out_) json_out_ = std::make_unique<JsonOut>(columns_);
  return *json_out_;
}

namespace {

// An unlinked file for the kept rows, in $TMPDIR or /tmp, readable by no one else; null when
// none can be made.
std::FILE* open_spool() {
  const char* env = std::getenv("TMPDIR");
  const std::string dir = env && *env ? env : "/tmp";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {  // a file system without O_TMPFILE
    std::string path = dir + "/nodus-listing-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0) return nullptr;
    ::unlink(path.c_str());
  }
  std::FILE* f = ::fdopen(fd, "w+");
  if (!f) {
    ::close(fd);
    return nullptr;
  }
  std::setvbuf(f, nullptr, _IOFBF, 1 << 16);
  return f;
}

// A kept row is one line: '*' (marked) or ' ', then its cells as shown, each after the first
// preceded by \x1f. Shown cells hold no control character (safe_cells), so neither separator
// can occur inside one.
constexpr char kCellSeparator = '\x1f';

}  // namespace

bool TableWriter::keep_measured_rows() {
  if (!measures() || spool_) return spool_ != nullptr;
  spool_ = open_spool();
  return spool_ != nullptr;
}

void TableWriter::measure(std::vector<std::string> text, bool marked) {
  any_mark_ = any_mark_ || marked;
  const std::vector<std::string> cells = safe_cells(std::move(text), columns_.size());
  for (size_t c = 0; c < cells.size(); ++c) {
    width_[c] = std::max(width_[c], display_width(cells[c]));
    if (!cells[c].empty() && cells[c] != "-") has_value_[c] = true;
  }
  if (spool_) {
    std::fputc(marked ? '*' : ' ', spool_);
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) std::fputc(kCellSeparator, spool_);
      std::fwrite(cells[c].data(), 1, cells[c].size(), spool_);
    }
    std::fputc('\n', spool_);
    ++kept_;
  }
}

void TableWriter::write_kept_rows() {
  auto fail = [](const char* what) {
    throw Fatal(std::string("the listing's temporary file (in $TMPDIR or /tmp): ") + what +
                " failed: " + std::strerror(errno));
  };
  if (std::fflush(spool_) != 0 || std::ferror(spool_)) fail("writing");
  if (std::fseek(spool_, 0, SEEK_SET) != 0) fail("rewinding");
  std::unique_ptr<char, decltype(&std::free)> line(nullptr, &std::free);
  size_t capacity = 0;
  std::vector<std::string> cells(columns_.size());
  size_t read = 0;
  for (;;) {
    char* buffer = line.release();
    ssize_t n = ::getline(&buffer, &capacity, spool_);
    line.reset(buffer);
    if (n <= 0) break;
    std::string_view row(buffer, static_cast<size_t>(n));
    if (row.back() == '\n') row.remove_suffix(1);
    const bool marked = !row.empty() && row.front() == '*';
    row.remove_prefix(std::min<size_t>(1, row.size()));
    for (auto& cell : cells) {
      const size_t end = std::min(row.find(kCellSeparator), row.size());
      cell.assign(row.substr(0, end));
      row.remove_prefix(std::min(end + 1, row.size()));
    }
    ++rows_;
    ++read;
    sink_(format_ == Format::kTable ? text_line(cells, marked) : md_line(cells, marked));
  }
  if (std::ferror(spool_) || read != kept_) fail("reading back");
}

std::vector<size_t> TableWriter::shown_columns() const {
  std::vector<size_t> shown;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c].show == Show::kMachine) continue;
    if (columns_[c].show == Show::kIfAny && !has_value_[c]) continue;
    shown.push_back(c);
  }
  return shown;
}

std::string TableWriter::text_line(const std::vector<std::string>& cells, bool marked) const {
  std::string out = any_mark_ ? (marked ? "* " : "  ") : "";
  for (size_t i = 0; i < shown_.size(); ++i) {
    size_t c = shown_[i];
    std::string pad(width_[c] - std::min(width_[c], display_width(cells[c])), ' ');
    out += columns_[c].right ? pad + cells[c] : cells[c] + pad;
    if (i + 1 < shown_.size()) out += "  ";
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + "\n";
}

std::string TableWriter::md_line(const std::vector<std::string>& cells, bool marked) const {
  std::string out = "|";
  for (size_t c : shown_) {
    std::string v = md_escape(cells[c]);
    out += " " + (marked && !v.empty() ? "**" + v + "**" : v) + " |";
  }
  return out + "\n";
}

void TableWriter::start() {
  if (started_) return;
  started_ = true;
  shown_ = shown_columns();
  std::vector<std::string> headers;
  for (const auto& col : columns_) headers.push_back(col.header);
  headers = safe_cells(std::move(headers), columns_.size());
  switch (format_) {
    case Format::kTable:
      for (size_t c : shown_) width_[c] = std::max(width_[c], display_width(headers[c]));
      sink_(text_line(headers, false));
      return;
    case Format::kMd: {
      std::string out = md_line(headers, false) + "|";
      for (size_t c : shown_) out += columns_[c].right ? " ---: |" : " --- |";
      sink_(out + "\n");
      return;
    }
    case Format::kCsv: {
      // Every declared column and schema_version, in every row; null is an empty field; arrays
      // and objects are their compact JSON text.
      std::string out;
      for (const auto& col : columns_) out += csv_escape(col.key) + ",";
      sink_(out + "schema_version\n");
      return;
    }
    case Format::kJson:
      return;  // "[" comes with the first row: an empty listing is "[]"
  }
}

void TableWriter::write(std::vector<std::string> text, const nlohmann::json& raw, bool marked) {
  if (!wants_text()) {  // json, csv: the values under the declared keys, null where raw lacks one
    std::vector<nlohmann::json> values;
    values.reserve(columns_.size());
    for (const auto& col : columns_) {
      auto it = raw.is_object() ? raw.find(col.key) : raw.end();
      values.push_back(raw.is_object() && it != raw.end() ? *it : nlohmann::json());
    }
    return write_values(values);
  }
  start();
  ++rows_;
  sink_(format_ == Format::kTable ? text_line(safe_cells(std::move(text), columns_.size()), marked)
                                  : md_line(safe_cells(std::move(text), columns_.size()), marked));
}

void TableWriter::write_values(const std::vector<nlohmann::json>& values) {
  if (wants_text()) return;  // table and md print text (write)
  start();
  ++rows_;
  static const nlohmann::json kNull, kVersion = kSchemaVersion;
  JsonOut& json = json_out();
  auto value = [&](size_t c) -> const nlohmann::json& {  // column c's value
    return c < values.size() ? values[c] : kNull;
  };
  std::string out;
  if (format_ == Format::kCsv) {
    // Every declared column and schema_version; null is an empty field; arrays and objects are
    // their compact JSON text.
    for (size_t c = 0; c < columns_.size(); ++c) {
      // As in json, the contract's schema_version wins over a column of that key.
      const auto& v = columns_[c].key == "schema_version" ? kVersion : value(json.source[c]);
      if (!v.is_null())
        out += csv_escape(v.is_string() ? v.get_ref<const std::string&>() : json.dump(v, false));
      out += ",";
    }
    sink_(out + std::to_string(kSchemaVersion) + "\n");
    return;
  }
  // The bytes dump_json prints for the whole array: each row one level in, its members two.
  // Rows written by older versions may hold invalid UTF-8: replaced rather than failing.
  out = rows_ == 1 ? "[\n  {\n" : ",\n  {\n";
  for (size_t m = 0; m < json.members.size(); ++m) {
    const auto& [key, column] = json.members[m];
    out += "    ";
    out += key;
    out += ": ";
    out += json.dump(column < 0 ? kVersion : value(static_cast<size_t>(column)), true);
    out += m + 1 < json.members.size() ? ",\n" : "\n";
  }
  sink_(out + "  }");
}

void TableWriter::finish() {
  start();
  if (spool_) write_kept_rows();
  if (format_ == Format::kJson) sink_(rows_ == 0 ? "[]\n" : "\n]\n");
}

std::string csv_escape(std::string_view raw) {
  // Printable ASCII (the common case) is valid UTF-8 without controls: neither pass below
  // would change it.
  const bool plain =
      std::all_of(raw.begin(), raw.end(), [](char c) { return c >= 0x20 && c < 0x7F; });
  std::string field = plain ? std::string(raw) : replace_invalid_utf8(raw);
  // A field a job controls (a metric's name, a note) never reaches a terminal as an escape
  // sequence, nor a spreadsheet as a formula: controls other than newlines and tabs are written
  // as escapes (\x1b), and a field starting with = + @ gets a leading ' (as OWASP advises).
  bool controls = false;
  for (size_t i = 0; !plain && i < field.size(); ++i) {
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

}  // namespace nodus
