#pragma once
// GPU utilization as one series over time: each sampling round's GPUs averaged into one point.
// Summary, the --min-util policy and the sparkline all read utilization through this.

#include <string>
#include <vector>

#include "core/samples.h"

namespace nodus::telemetry {

struct UtilPoint {
  double t = 0;     // time of the round's first sample
  double util = 0;  // mean utilization.gpu across the round's GPUs, percent
  int gpus = 0;     // GPUs in the round
};

// Groups samples into rounds (each GPU at most once, samples closer together than half the
// usual per-GPU interval) in time order and averages each round.
std::vector<UtilPoint> util_series(std::vector<GpuSample> samples);

// Block characters ▁▂▃▄▅▆▇█ for percentages 0..100, one per bucket: values are split in time
// order into min(width, size) buckets and each bucket's mean is drawn. "" for no values.
std::string sparkline(const std::vector<double>& percents, size_t width);

// The sparkline of util_series(samples).
std::string util_sparkline(const std::vector<GpuSample>& samples, size_t width);

}  // namespace nodus::telemetry
