#include "report/format.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/parse.h"

namespace nodus::report {
namespace {

// "1234567.89" -> "1,234,567.89" (sign and decimals kept).
std::string group_thousands(const std::string& plain) {
  const size_t start = (!plain.empty() && plain[0] == '-') ? 1 : 0;
  const size_t end = std::min(plain.find('.'), plain.size());
  std::string out = plain.substr(0, start);
  for (size_t i = start; i < end; ++i) {
    if (i > start && (end - i) % 3 == 0) out += ',';
    out += plain[i];
  }
  return out + plain.substr(end);
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    // "-0.00" reads as a value below zero; it is zero at this precision.
    if (s.find_first_of("123456789") == std::string::npos) s.erase(0, 1);
  }
  return s;
}

}  // namespace

std::string format_number(double value) {
  if (!std::isfinite(value)) return "n/a";
  const double a = std::fabs(value);
  // Three significant digits below 100, none above.
  int decimals = 0;
  if (a > 0 && a < 100) decimals = std::min(6, 2 - static_cast<int>(std::floor(std::log10(a))));
  std::string s = fixed(value, decimals);
  // Trailing zeros after the point say nothing here (3.50 -> 3.5).
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return group_thousands(s);
}

std::string format_tick(double value, double step) {
  int decimals = 0;
  if (step > 0 && step < 1) decimals = static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  // A step such as 0.25 needs one more decimal than its magnitude says.
  if (step > 0 && decimals >= 0) {
    const double scaled = step * std::pow(10.0, decimals);
    if (std::fabs(scaled - std::round(scaled)) > 1e-6) ++decimals;
  }
  return group_thousands(fixed(value, std::min(decimals, 8)));
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "n/a";
  return format_duration(Millis(std::llround(seconds * 1000)));
}

std::string format_date_utc(double unix_seconds) {
  if (unix_seconds <= 0 || !std::isfinite(unix_seconds)) return "";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    constexpr std::string_view kPlain =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,@%{}";
    const bool plain = !word.empty() && word.find_first_not_of(kPlain) == std::string::npos;
    // {a,b} and {1..3} would be brace-expanded by bash; {num_workers} is a placeholder, as typed.
    const bool braces =
        word.find('{') != std::string::npos &&
        (word.find(',') != std::string::npos || word.find("..") != std::string::npos);
    if (plain && !braces) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string gpu_text(const std::string& gpu_type, int gpu_count) {
  if (gpu_type.empty() || gpu_count <= 0) return "CPU only";
  return std::to_string(gpu_count) + " \xC3\x97 " + gpu_type;
}

std::string work_items(const std::string& throughput_unit) {
  const std::string& unit = throughput_unit;
  if (unit.size() > 2 && unit.compare(unit.size() - 2, 2, "/s") == 0)
    return unit.substr(0, unit.size() - 2);
  return "samples";
}

}  // namespace nodus::report
