#pragma once
// Metrics read from a job's output with `--metric-regex NAME=REGEX`, for scripts that print
// numbers but write no NODUS_METRICS file, e.g. Hugging Face Trainer's final line
//   {'train_runtime': 12.3, 'train_samples_per_second': 123.4, ...}
// with  --metric-regex "samples_per_sec='train_samples_per_second': ([0-9.eE+-]+)".
//
// REGEX is ECMAScript (std::regex), checked when parsed. Each match in a line gives one point:
// the first capture group, or the whole match when the regex has none, parsed as a number
// (matches that are not numbers are ignored). A line is split at '\r' first (progress bars
// redraw with it), and a segment longer than kMaxRegexInput bytes is skipped: std::regex
// recurses per character and would exhaust the stack on very long input.

#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/samples.h"

namespace nodus::sweep {

inline constexpr size_t kMaxRegexInput = 4096;

struct MetricRegex {
  std::string name;     // metric name, [A-Za-z_][A-Za-z0-9_]*
  std::string pattern;  // as the user typed it
  std::regex regex;
};

// "NAME=REGEX"; the first '=' separates them, so REGEX may contain '='.
Result<MetricRegex> parse_metric_regex(std::string_view spec);
Result<std::vector<MetricRegex>> parse_metric_regexes(const std::vector<std::string>& specs);

// The points one output line gives, at time now.
std::vector<MetricPoint> extract_metrics(const std::vector<MetricRegex>& regexes,
                                         std::string_view line, double now);

}  // namespace nodus::sweep
