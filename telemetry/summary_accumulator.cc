#include "telemetry/summary_accumulator.h"

#include <algorithm>
#include <cmath>

#include "telemetry/util_series.h"

namespace nodus::telemetry {

void SteadyMean::add(double t, double value) {
  if (!std::isfinite(t) || !std::isfinite(value)) return;
  if (n_ == 0 || t < first_t_) {
    first_t_ = t;
    first_ = value;
  }
  ++n_;
  sum_ += value;
}

std::optional<double> SteadyMean::value() const {
  if (n_ == 0) return std::nullopt;
  if (n_ == 1) return first_;
  return (sum_ - first_) / static_cast<double>(n_ - 1);
}

void SummaryAccumulator::add_gpu(const std::vector<GpuSample>& samples) {
  for (const auto& s : samples) add_gpu(s);
}

void SummaryAccumulator::add_gpu(const GpuSample& s) {
  if (!std::isfinite(s.t) || !std::isfinite(s.util_gpu)) return;  // as the store drops them
  pending_.push_back(s);
  gpus_.insert(s.gpu_index);
  if (pending_.size() >= 2 * kChunk) fold(false);
}

void SummaryAccumulator::add_round(double util) {
  ++rounds_;
  double d = util - mean_;
  mean_ += d / static_cast<double>(rounds_);
  m2_ += d * (util - mean_);
  if (util < kIdleUtil) ++idle_;
  if (prev_) {
    bool down = *prev_ > kSawHigh && util < kSawLow;
    bool up = *prev_ < kSawLow && util > kSawHigh;
    if (down || up) ++jumps_;
  }
  prev_ = util;
  int bin = static_cast<int>(std::lround(std::clamp(util, 0.0, 100.0) * 10));
  ++histogram_[static_cast<size_t>(bin)];
}

// Folds the pending samples into rounds; unless `all`, the last round stays pending (its GPUs
// may still come in the next samples).
void SummaryAccumulator::fold(bool all) {
  if (pending_.empty()) return;
  auto rounds = util_series(pending_);
  size_t n = all ? rounds.size() : rounds.size() - 1;
  for (size_t i = 0; i < n; ++i) add_round(rounds[i].util);
  if (all) {
    pending_.clear();
    return;
  }
  const double keep_from = rounds.back().t;
  std::vector<GpuSample> rest;
  for (const auto& s : pending_)
    if (s.t >= keep_from) rest.push_back(s);
  pending_.swap(rest);
}

void SummaryAccumulator::add_host(const HostSample& h) {
  ++host_n_;
  cpu_sum_ += h.cpu_percent;
  saturation_sum_ += h.cpu_percent / (std::max(h.cores, 1) * 100.0);
  cores_ = std::max(cores_, h.cores);
  max_process_ = std::max(max_process_, h.max_process_cpu_percent);
}

void SummaryAccumulator::add_metric(const MetricPoint& p) {
  if (p.name == "data_wait") data_wait_.add(p.t, p.value);
}

Summary SummaryAccumulator::finish(double cost, double wall_s) {
  fold(true);
  Summary s;
  s.cost = cost;
  s.wall_s = wall_s;
  s.n_gpus = static_cast<int>(gpus_.size());
  s.n_samples = static_cast<int>(rounds_);
  if (rounds_ > 0) {
    s.util_mean = mean_;
    s.util_stddev = std::sqrt(m2_ / static_cast<double>(rounds_));
    s.idle_fraction = static_cast<double>(idle_) / static_cast<double>(rounds_);
    if (rounds_ >= 2) s.sawtooth = static_cast<double>(jumps_) / static_cast<double>(rounds_ - 1);
    // The median: the middle value (odd count) or the mean of the two middle values.
    auto kth = [&](int64_t k) {  // 0-based
      int64_t seen = 0;
      for (size_t b = 0; b < histogram_.size(); ++b) {
        seen += histogram_[b];
        if (seen > k) return static_cast<double>(b) / 10.0;
      }
      return 100.0;
    };
    s.util_median = rounds_ % 2 ? kth(rounds_ / 2) : (kth(rounds_ / 2 - 1) + kth(rounds_ / 2)) / 2;
    s.idle_usd = cost * (1.0 - *s.util_mean / 100.0);
  }
  s.n_host_samples = static_cast<int>(host_n_);
  if (host_n_ > 0) {
    s.cpu_percent_mean = cpu_sum_ / static_cast<double>(host_n_);
    s.cpu_saturation = saturation_sum_ / static_cast<double>(host_n_);
    s.cores = cores_;
    s.max_process_cpu = max_process_;
  }
  s.n_data_wait = static_cast<int>(data_wait_.count());
  s.data_wait_share = data_wait_.value();
  return s;
}

}  // namespace nodus::telemetry
