#include "sweep/metric_regex.h"

#include <re2/re2.h>

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
  const re2::RE2& re = *m.regex;
  const int groups = re.NumberOfCapturingGroups() >= 1 ? 2 : 1;
  re2::StringPiece text(segment.data(), segment.size());
  re2::StringPiece match[2];
  size_t pos = 0;
  while (pos <= segment.size() &&
         re.Match(text, pos, segment.size(), re2::RE2::UNANCHORED, match, groups)) {
    const re2::StringPiece& group = match[groups - 1];
    double v = 0;
    // A group that did not take part in the match has a null data pointer.
    if (group.data() != nullptr && to_number(std::string_view(group.data(), group.size()), &v))
      out->push_back({now, m.name, v});
    size_t end = static_cast<size_t>(match[0].data() - segment.data()) + match[0].size();
    if (match[0].empty()) break;  // an empty match would be found again and again
    pos = end;
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
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error is returned, not printed to stderr
  auto re = std::make_shared<const re2::RE2>(m.pattern, options);
  if (!re->ok()) return bad(spec, "invalid regex: " + re->error() + " (RE2 syntax)");
  m.regex = std::move(re);
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
