#include "sweep/metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/json_input.h"

namespace nodus::sweep {
namespace {

std::string size_text(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string plural(uint64_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

bool is_blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

}  // namespace

bool parse_metrics_line(std::string_view line, double now, std::vector<MetricPoint>* out) {
  if (is_blank(line)) return true;
  // ordered_json keeps the fields in the order the job wrote them.
  auto j = parse_untrusted_json<nlohmann::ordered_json>(line);
  if (!j.is_object()) return false;
  double t = now;
  auto t_field = j.find("t");
  if (t_field != j.end() && t_field->is_number() && std::isfinite(t_field->get<double>()))
    t = t_field->get<double>();
  for (const auto& [name, value] : j.items()) {
    if (name == "t" || name.empty() || !value.is_number()) continue;  // is_number: not bool
    double v = value.get<double>();
    if (std::isfinite(v)) out->push_back({t, name, v});
  }
  return true;
}

void MetricsStream::stop(std::string note) {
  stats_.stopped = true;
  stats_.note = std::move(note);
  partial_.clear();
  partial_.shrink_to_fit();
}

void MetricsStream::drop_partial() {
  partial_.clear();
  skipping_ = false;
}

void MetricsStream::skip(uint64_t bytes) {
  stats_.skipped_bytes += bytes;
  partial_.clear();
  skipping_ = true;  // resume at the next line boundary
}

void MetricsStream::complete_line(std::string_view line, double now,
                                  std::vector<MetricPoint>* out) {
  if (is_blank(line)) return;
  ++stats_.lines;
  std::vector<MetricPoint> points;
  if (!parse_metrics_line(line, now, &points)) {
    ++stats_.malformed;
    return;
  }
  uint64_t room = limits_.max_points - stats_.points;
  if (points.size() > room) points.resize(room);
  stats_.points += points.size();
  out->insert(out->end(), std::make_move_iterator(points.begin()),
              std::make_move_iterator(points.end()));
  if (stats_.points >= limits_.max_points)
    stop("stopped reading metrics after " + std::to_string(limits_.max_points) +
         " points (the limit); later lines are ignored");
}

std::vector<MetricPoint> MetricsStream::feed(std::string_view bytes, double now) {
  std::vector<MetricPoint> out;
  if (stats_.stopped) return out;
  uint64_t room = limits_.max_total_bytes - stats_.bytes;
  bool over = bytes.size() > room;
  if (over) bytes = bytes.substr(0, room);
  stats_.bytes += bytes.size();

  size_t pos = 0;
  while (pos < bytes.size() && !stats_.stopped) {
    size_t nl = bytes.find('\n', pos);
    bool complete = nl != std::string_view::npos;
    std::string_view piece = bytes.substr(pos, complete ? nl - pos : std::string_view::npos);
    if (skipping_) {
      skipping_ = !complete;
    } else if (partial_.size() + piece.size() > limits_.max_line_bytes) {
      ++stats_.too_long;
      partial_.clear();
      skipping_ = !complete;
    } else if (!complete) {
      partial_.append(piece);
    } else if (partial_.empty()) {
      complete_line(piece, now, &out);
    } else {
      partial_.append(piece);
      complete_line(partial_, now, &out);
      partial_.clear();
    }
    if (!complete) break;
    pos = nl + 1;
  }
  if (over && !stats_.stopped)
    stop("stopped reading metrics after " + size_text(limits_.max_total_bytes) +
         " (the limit); later lines are ignored");
  return out;
}

std::vector<MetricPoint> MetricsStream::finish(double now) {
  std::vector<MetricPoint> out;
  if (!stats_.stopped && !skipping_ && !partial_.empty()) complete_line(partial_, now, &out);
  partial_.clear();
  skipping_ = false;
  return out;
}

void MetricsFileReader::refuse(const std::string& what) {
  stream_.stop("NODUS_METRICS " + path_ + " " + what + ": not read (it must be a regular file)");
}

std::vector<MetricPoint> MetricsFileReader::poll(double now) {
  std::vector<MetricPoint> out;
  if (stream_.stats().stopped) return out;
  // lstat first: opening a device or FIFO for reading can itself have effects or block.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) return out;  // not written yet: nothing to report
  if (S_ISLNK(st.st_mode)) return refuse("is a symbolic link"), out;
  if (S_ISFIFO(st.st_mode)) return refuse("is a FIFO"), out;
  if (S_ISSOCK(st.st_mode)) return refuse("is a socket"), out;
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return refuse("is a device"), out;
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file"), out;
  // The job may swap the path between lstat and open: O_NOFOLLOW and O_NONBLOCK make that open
  // fail or return at once, and fstat checks what was really opened.
  int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP) refuse("is a symbolic link");
    return out;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (!S_ISREG(st.st_mode)) refuse("is not a regular file");
    return out;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  bool other_file = offset_ > 0 && (st.st_dev != dev_ || st.st_ino != ino_);
  if (other_file || size < offset_) {
    offset_ = 0;  // the job truncated or replaced its file and started again
    stream_.drop_partial();
    stream_.count_replaced();
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  const uint64_t budget = stream_.limits().max_poll_bytes;
  if (budget > 0 && size > offset_ + budget) {
    stream_.skip(size - budget - offset_);
    offset_ = size - budget;
  }
  // Reads up to the size seen now: a job appending while we read is picked up next poll.
  constexpr size_t kChunk = 1 << 20;
  std::string buf;
  while (!stream_.stats().stopped && offset_ < size) {
    // One byte past the limit lets the stream see that there is more than it may read.
    uint64_t room = stream_.limits().max_total_bytes - stream_.stats().bytes;
    uint64_t want = std::min<uint64_t>(kChunk, size - offset_);
    if (room < want) want = room + 1;  // room < kChunk here: no overflow
    if (buf.size() < want) buf.resize(want);
    ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += static_cast<uint64_t>(n);
    auto points = stream_.feed(std::string_view(buf.data(), static_cast<size_t>(n)), now);
    out.insert(out.end(), std::make_move_iterator(points.begin()),
               std::make_move_iterator(points.end()));
  }
  ::close(fd);
  return out;
}

std::vector<MetricPoint> MetricsFileReader::finish(double now) {
  auto out = poll(now);
  auto last = stream_.finish(now);
  out.insert(out.end(), std::make_move_iterator(last.begin()), std::make_move_iterator(last.end()));
  return out;
}

bool plausible_metric(const MetricPoint& p, std::string_view throughput_metric) {
  if (!std::isfinite(p.value) || !std::isfinite(p.t)) return false;
  auto ends_with = [&](std::string_view suffix) {
    return p.name.size() >= suffix.size() &&
           std::string_view(p.name).substr(p.name.size() - suffix.size()) == suffix;
  };
  if (p.name == "data_wait" || ends_with("_fraction") || ends_with("_share"))
    return p.value >= 0 && p.value <= 1;
  if (p.name == throughput_metric) return p.value > 0;
  return true;
}

std::string describe(const MetricsStats& stats) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (stats.malformed) add(plural(stats.malformed, "malformed line") + " skipped");
  if (stats.too_long) add(plural(stats.too_long, "over-long line") + " skipped");
  if (stats.skipped_bytes)
    add(size_text(stats.skipped_bytes) + " of a flood skipped unread (newest lines sampled)");
  if (stats.replaced) add("file truncated or replaced " + plural(stats.replaced, "time"));
  if (stats.stopped) add(stats.note);
  return out;
}

std::optional<double> steady_mean(const std::vector<MetricPoint>& points, std::string_view name) {
  double sum = 0, first = 0;
  size_t n = 0;
  for (const auto& p : points) {
    if (p.name != name) continue;
    if (n++ == 0)
      first = p.value;
    else
      sum += p.value;
  }
  if (n == 0) return std::nullopt;
  if (n == 1) return first;
  return sum / static_cast<double>(n - 1);
}

}  // namespace nodus::sweep
