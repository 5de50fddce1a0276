#include "telemetry/smi_csv.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "core/strings.h"

namespace nodus::telemetry {
namespace {

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

// Reads exactly `digits` decimal digits at s[*pos] and advances past them.
bool read_int(std::string_view s, size_t* pos, size_t digits, int* out) {
  if (*pos + digits > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < digits; ++i) {
    char c = s[*pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *pos += digits;
  *out = v;
  return true;
}

bool expect(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

}  // namespace

std::vector<std::string> smi_arguments(int interval_ms) {
  return {"--query-gpu=" + std::string(kSmiQueryFields), "--format=csv,noheader,nounits", "-lms",
          std::to_string(interval_ms)};
}

std::optional<double> parse_smi_timestamp(std::string_view text) {
  text = trim(text);
  std::tm tm{};
  size_t p = 0;
  int year, month, day, hour, minute, second;
  if (!read_int(text, &p, 4, &year) || !expect(text, &p, '/') || !read_int(text, &p, 2, &month) ||
      !expect(text, &p, '/') || !read_int(text, &p, 2, &day) || !expect(text, &p, ' ') ||
      !read_int(text, &p, 2, &hour) || !expect(text, &p, ':') || !read_int(text, &p, 2, &minute) ||
      !expect(text, &p, ':') || !read_int(text, &p, 2, &second))
    return std::nullopt;
  double fraction = 0;
  if (p < text.size()) {
    if (!expect(text, &p, '.') || p == text.size()) return std::nullopt;
    double scale = 0.1;
    for (; p < text.size(); ++p, scale /= 10) {
      if (!std::isdigit(static_cast<unsigned char>(text[p]))) return std::nullopt;
      fraction += (text[p] - '0') * scale;
    }
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  tm.tm_isdst = -1;  // let the zone rules decide, as nvidia-smi's localtime() did
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(t) + fraction;
}

std::optional<double> parse_smi_number(std::string_view field) {
  field = trim(field);
  if (field.empty()) return std::nullopt;
  for (char c : field)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-')) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

std::optional<GpuSample> parse_smi_line(std::string_view line) {
  auto f = split_commas(trim(line));
  if (f.size() < 7) return std::nullopt;
  auto t = parse_smi_timestamp(f[0]);
  auto index = parse_smi_number(f[1]);
  auto util = parse_smi_number(f[2]);
  if (!t || !index || !util || *index < 0 || *index != std::floor(*index)) return std::nullopt;
  GpuSample s;
  s.t = *t;
  s.gpu_index = static_cast<int>(*index);
  s.util_gpu = *util;
  s.util_mem = parse_smi_number(f[3]);
  s.mem_used_mib = parse_smi_number(f[4]);
  s.power_w = parse_smi_number(f[5]);
  s.sm_clock_mhz = parse_smi_number(f[6]);
  return s;
}

}  // namespace nodus::telemetry
