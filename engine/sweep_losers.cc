#include "engine/sweep_losers.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "engine/measure.h"

namespace nodus::engine {

std::optional<double> steady_throughput(const std::vector<MetricPoint>& points,
                                        const std::string& name, double warmup_s) {
  std::optional<double> first;
  double sum = 0;
  int n = 0;
  for (const auto& p : points) {
    if (p.name != name) continue;
    if (!first) first = p.t;
    if (p.t < *first + warmup_s) continue;
    sum += p.value;
    ++n;
  }
  if (n < kMinSteadyReports || sum <= 0) return std::nullopt;
  return sum / n;
}

std::optional<double> running_throughput(const std::vector<MetricPoint>& points,
                                         const std::string& name, double warmup_s) {
  if (auto own = steady_throughput(points, name, warmup_s)) return own;
  if (name != "samples_per_sec") return std::nullopt;
  // The hook's figure, as the cell's row will show it: tokens/s for a model fed token ids.
  auto hook_series = [&](const std::string& suffix) {
    std::set<std::string> ranks;
    for (const auto& p : points)
      if (is_hook_metric(p.name) && p.name.size() > suffix.size() &&
          p.name.compare(p.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        ranks.insert(p.name);
    return ranks;
  };
  std::set<std::string> ranks = hook_series(".tokens_per_sec");
  if (ranks.empty()) ranks = hook_series(".samples_per_sec");
  std::optional<double> total;
  for (const auto& rank : ranks)
    if (auto v = steady_throughput(points, rank, warmup_s)) total = total.value_or(0) + *v;
  return total;
}

double remaining_seconds(double work, double throughput, double elapsed_s) {
  if (throughput <= 0 || work <= 0) return 0;
  return std::max(0.0, work / throughput - elapsed_s);
}

double per_sample(double usd_per_s, double throughput) {
  return (usd_per_s > 0 ? usd_per_s : 1.0) / throughput;
}

std::optional<LoserVerdict> judge_running_cell(double cell_per_sample, double best_per_sample,
                                               double factor, const std::string& best_label) {
  if (best_per_sample <= 0 || cell_per_sample <= factor * best_per_sample) return std::nullopt;
  LoserVerdict v;
  v.ratio = cell_per_sample / best_per_sample;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "stopped early: its steady cost per sample was %.1fx the best finished cell's "
                "(%s), over the --stop-early %.3g limit",
                v.ratio, best_label.c_str(), factor);
  v.note = buf;
  return v;
}

}  // namespace nodus::engine
