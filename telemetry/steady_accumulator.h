#pragma once
// SteadyAccumulator gives steady_summary() (telemetry/phases.h) from a stream: every stored row
// of a finished job visited once, in time order, instead of the series held in memory. Each row
// goes to a whole-job SummaryAccumulator and, at or after steady_t, to a second one for the
// steady slice, so memory is two accumulators' whatever the job's length. The figures are
// steady_summary()'s on the same rows except where SummaryAccumulator's differ from
// summarize()'s (summary_accumulator.h): the median is exact to its 0.1% bins, and rounds are
// formed per chunk of SummaryAccumulator::kChunk samples.

#include <optional>

#include "core/samples.h"
#include "telemetry/summary.h"
#include "telemetry/summary_accumulator.h"

namespace nodus::telemetry {

class SteadyAccumulator {
 public:
  explicit SteadyAccumulator(std::optional<double> steady_t) : steady_t_(steady_t) {}

  // Rows in time order, as the store visits them.
  void add_gpu(const GpuSample& sample);
  void add_host(const HostSample& sample);
  void add_metric(const MetricPoint& point);  // the job's own reports (not the hook's)

  struct Result {
    Summary steady;  // steady_summary(): the slice's figures, money whole-job
    Summary whole;   // summarize() of every row
  };
  // Once, after the last row.
  Result finish(double cost, double wall_s);

 private:
  bool in_slice(double t) const { return steady_t_ && t >= *steady_t_; }

  std::optional<double> steady_t_;
  SummaryAccumulator whole_, slice_;
  bool slice_has_rows_ = false;  // steady_summary() falls back to whole-job for an empty slice
};

}  // namespace nodus::telemetry
