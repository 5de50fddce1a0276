#pragma once
// Metrics read from a job's output with `--metric-regex NAME=REGEX`, for scripts that print
// numbers but write no NODUS_METRICS file, e.g. Hugging Face Trainer's final line
//   {'train_runtime': 12.3, 'train_samples_per_second': 123.4, ...}
// with  --metric-regex "samples_per_sec='train_samples_per_second': ([0-9.eE+-]+)".
//
// REGEX is RE2 syntax (https://github.com/google/re2/wiki/Syntax), checked when parsed: matching
// takes time linear in the line's length whatever the pattern, so a pattern such as (a+)+b
// cannot stall the supervisor on a hostile line (ECMAScript/std::regex backtracks
// exponentially there). RE2 has no lookaround and no backreferences; such patterns are
// rejected as invalid. Each match in a line gives one point: the first capture group, or the
// whole match when the regex has none, parsed as a number (matches that are not numbers are
// ignored). A line is split at '\r' first (progress bars redraw with it), and a segment longer
// than kMaxRegexInput bytes is not scanned (a line that long is not a progress line).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/samples.h"

namespace re2 {
class RE2;
}

namespace nodus::sweep {

inline constexpr size_t kMaxRegexInput = 64 * 1024;

struct MetricRegex {
  std::string name;                       // metric name, [A-Za-z_][A-Za-z0-9_]*
  std::string pattern;                    // as the user typed it
  std::shared_ptr<const re2::RE2> regex;  // compiled; shared so the spec copies cheaply
};

// "NAME=REGEX"; the first '=' separates them, so REGEX may contain '='.
Result<MetricRegex> parse_metric_regex(std::string_view spec);
Result<std::vector<MetricRegex>> parse_metric_regexes(const std::vector<std::string>& specs);

// The points one output line gives, at time now.
std::vector<MetricPoint> extract_metrics(const std::vector<MetricRegex>& regexes,
                                         std::string_view line, double now);

}  // namespace nodus::sweep
