#include "sweep/metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <nlohmann/json.hpp>

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
  auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
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

std::vector<MetricPoint> MetricsFileReader::poll(double now) {
  std::vector<MetricPoint> out;
  if (stream_.stats().stopped) return out;
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;  // not written yet, or unreadable: nothing to report
  struct stat st {};
  if (::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) < offset_) {
    offset_ = 0;  // the job truncated its file and started again
    stream_.drop_partial();
  }
  constexpr size_t kChunk = 1 << 20;
  std::string buf(kChunk, '\0');
  while (!stream_.stats().stopped) {
    // One byte past the limit lets the stream see that there is more than it may read.
    uint64_t room = stream_.limits().max_total_bytes - stream_.stats().bytes;
    size_t want = room < kChunk ? static_cast<size_t>(room) + 1 : kChunk;
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

std::string describe(const MetricsStats& stats) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (stats.malformed) add(plural(stats.malformed, "malformed line") + " skipped");
  if (stats.too_long) add(plural(stats.too_long, "over-long line") + " skipped");
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
