#pragma once
// Reading what a job reports about itself in its NODUS_METRICS file: JSON lines such as
//   {"t": 1762400000.5, "step": 40, "samples_per_sec": 8400.2, "data_wait": 0.24}
// Each complete line gives one MetricPoint per numeric field other than "t" (booleans, strings,
// arrays and objects are ignored); the point's time is the line's "t" when numeric, else the time
// the caller passes in. Reading is incremental and bounded: a partial last line waits for its
// newline, malformed and over-long lines are skipped and counted, and reading stops for good
// once the byte or point limit is reached, so a runaway job cannot exhaust nodus's memory.

#include <sys/types.h>

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
  // At most this many bytes are parsed per MetricsFileReader::poll (0: no bound). When more
  // than that is waiting, the reader skips ahead to the newest bytes (starting at a line
  // boundary) and counts what it skipped: a job flooding its file is sampled, never followed
  // line by line, so one poll's work stays bounded.
  uint64_t max_poll_bytes = 0;
};

struct MetricsStats {
  uint64_t bytes = 0;          // bytes consumed
  uint64_t lines = 0;          // complete non-empty lines seen
  uint64_t malformed = 0;      // lines that are not a JSON object
  uint64_t too_long = 0;       // lines over max_line_bytes
  uint64_t points = 0;         // points produced
  uint64_t skipped_bytes = 0;  // not read: a flood outran max_poll_bytes (newest bytes kept)
  uint64_t replaced = 0;       // times the file was truncated or replaced and read anew
  bool stopped = false;        // a limit was reached, or the path was refused: nothing more is read
  std::string note;            // why it stopped, "" while reading
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
  // Bytes skipped unread (a flood); the next bytes fed start mid-line, up to their first newline
  // they are dropped too.
  void skip(uint64_t bytes);
  void count_replaced() { ++stats_.replaced; }

  const MetricsStats& stats() const { return stats_; }
  const MetricsLimits& limits() const { return limits_; }

  // Stops reading for good with `note` (a limit, a refused path).
  void stop(std::string note);

 private:
  void complete_line(std::string_view line, double now, std::vector<MetricPoint>* out);

  MetricsLimits limits_;
  MetricsStats stats_;
  std::string partial_;
  bool skipping_ = false;  // inside an over-long line: dropping bytes until its newline
};

// Reads a NODUS_METRICS file from where the previous call stopped. The file may not exist yet
// (no points) and may be truncated or replaced by the job (renamed over: read again from its
// start). The path belongs to the job, so it is opened O_RDONLY|O_NONBLOCK|O_NOFOLLOW and read
// only when it is a regular file: a FIFO, socket, device or symlink is refused for good with a
// note (stats().note), never opened for reading or waited on. poll() never blocks.
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
  void refuse(const std::string& what);

  std::string path_;
  MetricsStream stream_;
  uint64_t offset_ = 0;
  dev_t dev_ = 0;  // the file read so far; another inode at the path means it was replaced
  ino_t ino_ = 0;
};

// Whether a value a job wrote is believable, before it counts: data_wait and any metric whose name
// ends in _fraction or _share is a fraction in [0, 1]; the throughput metric is positive and
// finite; every value is finite. The rest counts as malformed (shown by `nodus show`).
bool plausible_metric(const MetricPoint& p, std::string_view throughput_metric);

// "2 malformed lines skipped; stopped reading after 64 MiB", or "" when all went well.
std::string describe(const MetricsStats& stats);

// The steady value of a metric: the mean of its reports after the first (the first interval
// includes start-up), or the only report; empty when there is none. Points in arrival order.
std::optional<double> steady_mean(const std::vector<MetricPoint>& points, std::string_view name);

}  // namespace nodus::sweep
