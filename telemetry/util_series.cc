#include "telemetry/util_series.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace nodus::telemetry {
namespace {

// The median gap between consecutive samples of one GPU: the sampling interval as recorded.
double typical_interval(const std::vector<GpuSample>& sorted) {
  std::map<int, double> last;
  std::vector<double> gaps;
  for (const auto& s : sorted) {
    auto it = last.find(s.gpu_index);
    if (it != last.end() && s.t > it->second) gaps.push_back(s.t - it->second);
    last[s.gpu_index] = s.t;
  }
  if (gaps.empty()) return 0;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

}  // namespace

std::vector<UtilPoint> util_series(std::vector<GpuSample> samples) {
  std::stable_sort(samples.begin(), samples.end(), [](const GpuSample& a, const GpuSample& b) {
    return a.t < b.t || (a.t == b.t && a.gpu_index < b.gpu_index);
  });
  // With a single round there is no interval to go by: only a repeated GPU starts a new round.
  const double interval = typical_interval(samples);
  const double tolerance = interval > 0 ? interval / 2 : HUGE_VAL;
  std::vector<UtilPoint> out;
  std::set<int> in_round;
  double sum = 0;
  auto close_round = [&] {
    if (in_round.empty()) return;
    out.back().gpus = static_cast<int>(in_round.size());
    out.back().util = sum / static_cast<double>(in_round.size());
    in_round.clear();
    sum = 0;
  };
  for (const auto& s : samples) {
    if (!in_round.empty() && (in_round.count(s.gpu_index) || s.t - out.back().t > tolerance))
      close_round();
    if (in_round.empty()) out.push_back({s.t, 0, 0});
    in_round.insert(s.gpu_index);
    sum += s.util_gpu;
  }
  close_round();
  return out;
}

std::string sparkline(const std::vector<double>& percents, size_t width) {
  static const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (percents.empty() || width == 0) return "";
  size_t buckets = std::min(width, percents.size());
  std::string out;
  for (size_t b = 0; b < buckets; ++b) {
    size_t begin = b * percents.size() / buckets;
    size_t end = (b + 1) * percents.size() / buckets;
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += percents[i];
    double mean = std::clamp(sum / static_cast<double>(end - begin), 0.0, 100.0);
    int level = std::min(7, static_cast<int>(mean / 100.0 * 8.0));
    out += kBlocks[level];
  }
  return out;
}

std::string util_sparkline(const std::vector<GpuSample>& samples, size_t width) {
  std::vector<double> values;
  for (const auto& p : util_series(samples)) values.push_back(p.util);
  return sparkline(values, width);
}

}  // namespace nodus::telemetry
