#include "telemetry/util_policy.h"

#include <cstdio>

#include "core/parse.h"
#include "telemetry/util_series.h"

namespace nodus::telemetry {

UtilPolicy::UtilPolicy(double min_util_pct, Millis window, double start)
    : min_util_(min_util_pct),
      window_s_(static_cast<double>(window.count()) / 1000.0),
      window_(window),
      start_(start) {}

void UtilPolicy::add(const std::vector<GpuSample>& samples) {
  samples_.insert(samples_.end(), samples.begin(), samples.end());
}

std::optional<double> UtilPolicy::window_mean(double now) const {
  std::vector<GpuSample> in_window;
  for (const auto& s : samples_)
    if (s.t > now - window_s_ && s.t <= now) in_window.push_back(s);
  auto series = util_series(std::move(in_window));
  if (series.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& p : series) sum += p.util;
  return sum / static_cast<double>(series.size());
}

std::optional<std::string> UtilPolicy::check(double now) {
  // Samples are kept for one window; anything older can never count again.
  while (!samples_.empty() && samples_.front().t <= now - window_s_) samples_.pop_front();
  if (now - start_ < window_s_) return std::nullopt;
  auto mean = window_mean(now);
  if (!mean || *mean >= min_util_) return std::nullopt;
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g%%", min_util_);
  return "mean GPU utilization " + format_percent(*mean) + " over the last " +
         format_duration(window_) + " < " + limit;
}

}  // namespace nodus::telemetry
