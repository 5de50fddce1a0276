#pragma once
// SummaryAccumulator builds a job's Summary from running aggregates, fed sample by sample while
// the job runs, so the supervisor never holds the whole series: its memory does not grow with
// the job's length (a 24 h 8-GPU job is ~700k GPU samples). It gives what summarize() gives on
// the same series, except that the median comes from a histogram of 0.1% bins (utilization
// rounded to 0.1%) and rounds are formed per chunk of kChunk samples (a round cut at a chunk's
// end is completed by the next chunk).

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/samples.h"
#include "telemetry/summary.h"

namespace nodus::telemetry {

// The mean of a metric's reports after the first by time (the first covers start-up); the only
// report when there is one. Constant memory.
class SteadyMean {
 public:
  void add(double t, double value);
  std::optional<double> value() const;
  int64_t count() const { return n_; }

 private:
  int64_t n_ = 0;
  double sum_ = 0;
  double first_t_ = 0;
  double first_ = 0;
};

class SummaryAccumulator {
 public:
  static constexpr size_t kChunk = 4096;

  void add_gpu(const std::vector<GpuSample>& samples);
  void add_gpu(const GpuSample& sample);  // one row at a time (samples in time order)
  void add_host(const HostSample& sample);
  void add_metric(const MetricPoint& point);  // data_wait reports count; others are ignored

  Summary finish(double cost, double wall_s);

 private:
  void fold(bool all);
  void add_round(double util);

  std::vector<GpuSample> pending_;  // samples not yet folded into rounds (< 2 x kChunk)
  std::set<int> gpus_;
  int64_t rounds_ = 0;
  double mean_ = 0, m2_ = 0;  // Welford
  int64_t idle_ = 0;
  int64_t jumps_ = 0;
  std::optional<double> prev_;
  std::array<int64_t, 1001> histogram_{};  // utilization in 0.1% bins, 0..100

  int64_t host_n_ = 0;
  double cpu_sum_ = 0, saturation_sum_ = 0, max_process_ = 0;
  int cores_ = 0;

  SteadyMean data_wait_;
};

}  // namespace nodus::telemetry
