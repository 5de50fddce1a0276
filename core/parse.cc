#include "core/parse.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/secret.h"

namespace nodus {
namespace {

Error bad(std::string_view flag, std::string_view text, std::string_view allowed) {
  return Error::permanent(std::string(flag) + ": invalid value '" + std::string(text) +
                          "': " + std::string(allowed));
}

bool parse_number(std::string_view s, double* out) {
  if (s.empty()) return false;
  std::string copy(s);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return false;
  // Reject hex floats, "inf", "nan" spellings strtod accepts.
  for (char c : copy)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' ||
          c == 'e' || c == 'E'))
      return false;
  *out = v;
  return true;
}

}  // namespace

std::string to_lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string to_upper(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

Result<Millis> parse_duration(std::string_view text, std::string_view flag) {
  static constexpr std::string_view kAllowed =
      "expected a duration > 0 like 90s, 30m, 2h, 1h30m, 1d or 250ms";
  if (text.empty()) return bad(flag, text, kAllowed);
  double total_ms = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    double value = 0;
    if (!parse_number(text.substr(start, i - start), &value)) return bad(flag, text, kAllowed);
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = to_lower(text.substr(unit_start, i - unit_start));
    double scale;
    if (unit.empty()) {
      if (any || i != text.size()) return bad(flag, text, kAllowed);  // "1h30" is ambiguous
      scale = 1000;
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m" || unit == "min") {
      scale = 60e3;
    } else if (unit == "h") {
      scale = 3600e3;
    } else if (unit == "d") {
      scale = 86400e3;
    } else {
      return bad(flag, text, kAllowed);
    }
    total_ms += value * scale;
    any = true;
  }
  if (!any || !std::isfinite(total_ms) || total_ms < 1 || total_ms > 365.0 * 86400e3)
    return bad(flag, text, kAllowed);
  return Millis(static_cast<long long>(std::llround(total_ms)));
}

Result<double> parse_usd(std::string_view text, std::string_view flag) {
  static constexpr std::string_view kAllowed = "expected a dollar amount > 0 like 5, 5.00 or $5";
  std::string_view s = text;
  if (!s.empty() && s.front() == '$') s.remove_prefix(1);
  double v = 0;
  if (!parse_number(s, &v) || !std::isfinite(v) || v <= 0 || v > 1e9)
    return bad(flag, text, kAllowed);
  return v;
}

Result<GpuRequest> parse_gpu_request(std::string_view text) {
  static constexpr std::string_view kAllowed =
      "expected TYPE[:COUNT] like H100, h100:8 or L4:2 (COUNT 1-64), or 'none'";
  if (text.empty()) return bad("--gpu", text, kAllowed);
  if (to_lower(text) == "none") return GpuRequest{};
  GpuRequest req;
  auto colon = text.find(':');
  std::string_view type = text.substr(0, colon);
  if (type.empty()) return bad("--gpu", text, kAllowed);
  for (char c : type)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return bad("--gpu", text, kAllowed);
  req.type = std::string(type);
  req.count = 1;
  if (colon != std::string_view::npos) {
    std::string_view n = text.substr(colon + 1);
    int count = 0;
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
    if (n.empty() || ec != std::errc() || p != n.data() + n.size() || count < 1 || count > 64)
      return bad("--gpu", text, kAllowed);
    req.count = count;
  }
  return req;
}

Result<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text) {
  static constexpr std::string_view kAllowed =
      "expected NAME=VALUE with NAME of [A-Za-z_][A-Za-z0-9_]*";
  auto eq = text.find('=');
  // The value as it may be echoed: redacted when its name or form says secret, and cut short
  // (it may be 300 KB).
  std::string shown(text);
  if (eq != std::string_view::npos) {
    std::string value = redact_env_value(text.substr(0, eq), text.substr(eq + 1));
    if (value.size() > 32) value = value.substr(0, 32) + "...";
    shown = std::string(text.substr(0, eq)) + "=" + value;
  }
  if (eq == std::string_view::npos || eq == 0) return bad("--env", shown, kAllowed);
  std::string_view key = text.substr(0, eq);
  if (std::isdigit(static_cast<unsigned char>(key[0]))) return bad("--env", shown, kAllowed);
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return bad("--env", shown, kAllowed);
  // The kernel passes no single string over MAX_ARG_STRLEN (32 pages: 131072 bytes, with its
  // NUL) to a program: a longer NAME=VALUE could never reach the job (the job would fail to
  // start, or a Slurm job would run without it). Refused before anything runs.
  constexpr size_t kMaxEnvString = 131072 - 1;
  if (text.size() > kMaxEnvString)
    return Error::permanent("--env: " + shown + " is " + std::to_string(text.size()) +
                            " bytes; one NAME=VALUE may hold at most " +
                            std::to_string(kMaxEnvString) +
                            " (the kernel's limit for one string passed to a program)");
  return std::make_pair(std::string(key), std::string(text.substr(eq + 1)));
}

Result<double> parse_percent(std::string_view text, std::string_view flag) {
  std::string_view s = text;
  if (!s.empty() && s.back() == '%') s.remove_suffix(1);
  double v = 0;
  if (!parse_number(s, &v) || !std::isfinite(v) || v < 0 || v > 100)
    return bad(flag, text, "expected a percentage between 0 and 100");
  return v;
}

Result<uint64_t> parse_size(std::string_view text, std::string_view flag, uint64_t min_bytes) {
  const std::string allowed =
      "expected a size such as 512M, 1G or 2GiB (at least " + format_size(min_bytes) + "), or none";
  std::string lower = to_lower(text);
  if (lower == "none") return uint64_t{0};
  std::string_view s = lower;
  for (std::string_view unit : {"ib", "b"})
    if (s.size() > unit.size() && s.substr(s.size() - unit.size()) == unit) {
      s.remove_suffix(unit.size());
      break;
    }
  double scale = 1;
  if (!s.empty()) {
    const std::string_view units = "kmgt";
    if (auto at = units.find(s.back()); at != std::string_view::npos) {
      scale = std::pow(1024.0, static_cast<double>(at + 1));
      s.remove_suffix(1);
    }
  }
  double v = 0;
  if (!parse_number(s, &v) || !std::isfinite(v) || v < 0) return bad(flag, text, allowed);
  const double bytes = v * scale;
  if (bytes < static_cast<double>(min_bytes) || bytes > 0x1p60) return bad(flag, text, allowed);
  return static_cast<uint64_t>(bytes);
}

std::string format_size(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_duration(Millis d) {
  long long ms = d.count();
  char buf[64];
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1fs", ms / 1000.0);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", ms / 60'000, (ms / 1000) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", ms / 3'600'000, (ms / 60'000) % 60);
  }
  return buf;
}

std::string format_throughput(double per_second) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f",
                per_second >= 100  ? 0
                : per_second >= 10 ? 1
                                   : 2,
                per_second);
  return buf;
}

std::string format_percent(double percent) {
  if (!std::isfinite(percent)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", percent);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s + "%";
}

std::string format_usd(double usd) {
  char buf[64];
  if (usd != 0 && std::fabs(usd) < 0.01)
    std::snprintf(buf, sizeof buf, "$%.4f", usd);
  else
    std::snprintf(buf, sizeof buf, "$%.2f", usd);
  return buf;
}

}  // namespace nodus
