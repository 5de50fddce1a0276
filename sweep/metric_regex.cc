#include "sweep/metric_regex.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "sweep/grid.h"

namespace nodus::sweep {
namespace {

Error bad(std::string_view spec, const std::string& problem) {
  return Error::permanent("--metric-regex '" + std::string(spec) + "': " + problem);
}

// A plain decimal number, optionally signed, with an exponent: what a log prints.
bool to_number(std::string_view s, double* out) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' ||
          c == 'e' || c == 'E'))
      return false;
  std::string copy(s);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

void search(const MetricRegex& m, std::string_view segment, double now,
            std::vector<MetricPoint>* out) {
  using It = std::string_view::const_iterator;
  try {
    for (std::regex_iterator<It> it(segment.begin(), segment.end(), m.regex), end; it != end;
         ++it) {
      const auto& match = *it;
      const auto& group = match.size() > 1 ? match[1] : match[0];
      double v = 0;
      auto text = segment.substr(group.first - segment.begin(), group.length());
      if (group.matched && to_number(text, &v)) out->push_back({now, m.name, v});
      if (match.length(0) == 0) break;  // an empty match would be found again and again
    }
  } catch (const std::regex_error&) {
    // error_complexity / error_stack on a pathological line: that line gives nothing.
  }
}

}  // namespace

Result<MetricRegex> parse_metric_regex(std::string_view spec) {
  auto eq = spec.find('=');
  if (eq == std::string_view::npos)
    return bad(spec,
               "expected NAME=REGEX, like samples_per_sec='train_samples_per_second': "
               "([0-9.]+)");
  MetricRegex m;
  m.name = std::string(spec.substr(0, eq));
  m.pattern = std::string(spec.substr(eq + 1));
  if (!is_param_name(m.name))
    return bad(spec, "invalid name '" + m.name + "': names are [A-Za-z_][A-Za-z0-9_]*");
  if (m.pattern.empty()) return bad(spec, "empty regex");
  try {
    m.regex = std::regex(m.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return bad(spec, std::string("invalid regex: ") + e.what());
  }
  return m;
}

Result<std::vector<MetricRegex>> parse_metric_regexes(const std::vector<std::string>& specs) {
  std::vector<MetricRegex> out;
  for (const auto& spec : specs) {
    auto m = parse_metric_regex(spec);
    if (!m) return m.error();
    out.push_back(std::move(*m));
  }
  return out;
}

std::vector<MetricPoint> extract_metrics(const std::vector<MetricRegex>& regexes,
                                         std::string_view line, double now) {
  std::vector<MetricPoint> out;
  if (regexes.empty()) return out;
  while (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  size_t pos = 0;
  while (pos <= line.size()) {
    size_t cr = line.find('\r', pos);
    std::string_view segment = line.substr(pos, cr == std::string_view::npos ? cr : cr - pos);
    if (!segment.empty() && segment.size() <= kMaxRegexInput)
      for (const auto& m : regexes) search(m, segment, now, &out);
    if (cr == std::string_view::npos) break;
    pos = cr + 1;
  }
  return out;
}

}  // namespace nodus::sweep
