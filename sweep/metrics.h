#pragma once
// Reading what a job reports about itself in its NODUS_METRICS file: JSON lines such as
//   {"t": 1762400000.5, "step": 40, "samples_per_sec": 8400.2, "data_wait": 0.24}
// Each complete line gives one MetricPoint per numeric field other than "t" (booleans, strings,
// arrays and objects are ignored); the point's time is the line's "t" when numeric, else the time
// the caller passes in. Reading is incremental and bounded: a partial last line waits for its
// newline, malformed and over-long lines are skipped and counted, and reading stops for good
// once the byte or point limit is reached, so a runaway job cannot exhaust nodus's memory.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/samples.h"

namespace nodus::sweep {

inline constexpr std::string_view kDefaultThroughputMetric = "samples_per_sec";

struct MetricsLimits {
  size_t max_line_bytes = 64 * 1024;       // longer lines are skipped
  uint64_t max_total_bytes = 64ull << 20;  // reading stops after this many bytes
  uint64_t max_points = 1'000'000;         // reading stops after this many points
};

struct MetricsStats {
  uint64_t bytes = 0;      // bytes consumed
  uint64_t lines = 0;      // complete non-empty lines seen
  uint64_t malformed = 0;  // lines that are not a JSON object
  uint64_t too_long = 0;   // lines over max_line_bytes
  uint64_t points = 0;     // points produced
  bool stopped = false;    // a limit was reached: nothing more is read
  std::string note;        // why it stopped, "" while reading
};

// One line, without its newline, appended to out as points. False when the line is not a JSON
// object (an empty or blank line is true and yields nothing).
bool parse_metrics_line(std::string_view line, double now, std::vector<MetricPoint>* out);

// Splits a byte stream into lines and parses them, within limits.
class MetricsStream {
 public:
  explicit MetricsStream(MetricsLimits limits = {}) : limits_(limits) {}

  // Points of the lines that bytes complete. Bytes past a limit are ignored.
  std::vector<MetricPoint> feed(std::string_view bytes, double now);
  // At the job's end: an unterminated last line counts as complete.
  std::vector<MetricPoint> finish(double now);
  // Forgets a partial line (the file was truncated and is read again from its start).
  void drop_partial();

  const MetricsStats& stats() const { return stats_; }
  const MetricsLimits& limits() const { return limits_; }

 private:
  void complete_line(std::string_view line, double now, std::vector<MetricPoint>* out);
  void stop(std::string note);

  MetricsLimits limits_;
  MetricsStats stats_;
  std::string partial_;
  bool skipping_ = false;  // inside an over-long line: dropping bytes until its newline
};

// Reads a NODUS_METRICS file from where the previous call stopped. The file may not exist yet
// (no points) and may be truncated by the job (read again from its start).
class MetricsFileReader {
 public:
  explicit MetricsFileReader(std::string path, MetricsLimits limits = {})
      : path_(std::move(path)), stream_(limits) {}

  std::vector<MetricPoint> poll(double now);
  // The last poll, at the job's end.
  std::vector<MetricPoint> finish(double now);

  const MetricsStats& stats() const { return stream_.stats(); }
  uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  MetricsStream stream_;
  uint64_t offset_ = 0;
};

// "2 malformed lines skipped; stopped reading after 64 MiB", or "" when all went well.
std::string describe(const MetricsStats& stats);

// The steady value of a metric: the mean of its reports after the first (the first interval
// includes start-up), or the only report; empty when there is none. Points in arrival order.
std::optional<double> steady_mean(const std::vector<MetricPoint>& points, std::string_view name);

}  // namespace nodus::sweep
