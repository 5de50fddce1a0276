#include "report/series.h"

#include <algorithm>
#include <cmath>

namespace nodus::report {

AxisScale nice_scale(double largest_value, int target_intervals) {
  AxisScale scale;
  if (!std::isfinite(largest_value) || largest_value <= 0 || target_intervals < 1) {
    scale.ticks = {0, 0.25, 0.5, 0.75, 1};
    return scale;
  }
  // Of the round steps near largest / target, the one whose interval count is closest to the
  // target (the larger step on a tie, for less clutter).
  const double raw = largest_value / target_intervals;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 0, intervals = 0;
  for (double n : {10.0, 5.0, 2.0, 1.0}) {
    const double candidate = n * magnitude;
    const double count = std::ceil(largest_value / candidate - 1e-9);
    if (step == 0 ||
        std::fabs(count - target_intervals) < std::fabs(intervals - target_intervals)) {
      step = candidate;
      intervals = count;
    }
  }
  scale.step = step;
  scale.max = intervals * step;
  for (int i = 0; i <= static_cast<int>(intervals); ++i) scale.ticks.push_back(i * step);
  return scale;
}

std::vector<UtilPoint> thin_util_points(const std::vector<UtilPoint>& points, size_t max_points) {
  if (points.size() <= max_points || max_points < 2) return points;
  const size_t buckets = max_points / 2;
  const size_t per_bucket = (points.size() + buckets - 1) / buckets;
  std::vector<UtilPoint> out;
  out.reserve(max_points);
  for (size_t start = 0; start < points.size(); start += per_bucket) {
    const size_t end = std::min(points.size(), start + per_bucket);
    size_t lo = start, hi = start;
    for (size_t i = start; i < end; ++i) {
      if (points[i].util < points[lo].util) lo = i;
      if (points[i].util > points[hi].util) hi = i;
    }
    out.push_back(points[std::min(lo, hi)]);
    if (lo != hi) out.push_back(points[std::max(lo, hi)]);
  }
  return out;
}

std::vector<UtilPoint> rolling_mean(const std::vector<UtilPoint>& points, size_t window) {
  if (window <= 1 || points.empty()) return points;
  const size_t half = window / 2;
  std::vector<double> prefix(points.size() + 1, 0);
  for (size_t i = 0; i < points.size(); ++i) prefix[i + 1] = prefix[i] + points[i].util;
  std::vector<UtilPoint> out;
  out.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const size_t from = i >= half ? i - half : 0;
    const size_t to = std::min(points.size(), from + window);
    out.push_back({points[i].t, (prefix[to] - prefix[from]) / static_cast<double>(to - from)});
  }
  return out;
}

std::vector<std::pair<double, double>> idle_stretches(const std::vector<UtilPoint>& points,
                                                      double end, double threshold) {
  std::vector<std::pair<double, double>> spans;
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].util >= threshold) continue;
    const double from = points[i].t;
    const double to = (i + 1 < points.size()) ? points[i + 1].t : std::max(end, from);
    if (to <= from) continue;
    if (!spans.empty() && spans.back().second >= from) {
      spans.back().second = std::max(spans.back().second, to);
    } else {
      spans.emplace_back(from, to);
    }
  }
  return spans;
}

std::vector<std::pair<double, double>> merge_close(std::vector<std::pair<double, double>> spans,
                                                   double min_gap) {
  std::vector<std::pair<double, double>> out;
  for (const auto& span : spans) {
    if (!out.empty() && span.first - out.back().second < min_gap) {
      out.back().second = std::max(out.back().second, span.second);
    } else {
      out.push_back(span);
    }
  }
  return out;
}

}  // namespace nodus::report
