#pragma once
// The arithmetic behind the charts, kept apart from SVG so tests can check it directly: axis
// ranges with round ticks, the utilization line thinned for long jobs, and idle stretches.

#include <cstddef>
#include <utility>
#include <vector>

#include "report/report.h"

namespace nodus::report {

// An axis from 0 to max with ticks every step (1, 2 or 5 times a power of ten) and max a
// multiple of step at or above the largest value. Non-positive or non-finite input gives 0..1.
struct AxisScale {
  double max = 1;
  double step = 0.25;
  std::vector<double> ticks;  // 0, step, ..., max
};
AxisScale nice_scale(double largest_value, int target_intervals = 4);

// The points to draw: all of them up to max_points, else for each of max_points / 2 equal runs of
// samples its lowest and highest sample in time order, so dips to idle stay visible.
std::vector<UtilPoint> thin_util_points(const std::vector<UtilPoint>& points, size_t max_points);

// Centred moving average over `window` samples (shorter at the ends), one output point per
// input point; window <= 1 returns the points as they are.
std::vector<UtilPoint> rolling_mean(const std::vector<UtilPoint>& points, size_t window);

// Time intervals [from, to) in which utilization was below threshold: a sample at t_i stands for
// [t_i, t_(i+1)); the last one for [t_last, end). Adjacent intervals are merged.
std::vector<std::pair<double, double>> idle_stretches(const std::vector<UtilPoint>& points,
                                                      double end, double threshold);

// Intervals closer than min_gap merged, so a long sawtooth does not become thousands of shapes.
std::vector<std::pair<double, double>> merge_close(std::vector<std::pair<double, double>> spans,
                                                   double min_gap);

}  // namespace nodus::report
