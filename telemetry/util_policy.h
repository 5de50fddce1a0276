#pragma once
// --min-util PCT --util-window DURATION: stop a job whose GPUs sit idle. Fed samples as they
// come; asks for a stop once a full window has passed since the job started and the mean
// utilization over the last window is below PCT. A window with no samples at all (the sampler
// stopped answering) never stops a job: no data is not idleness.

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/parse.h"
#include "core/samples.h"

namespace nodus::telemetry {

class UtilPolicy {
 public:
  // start: the job's start, unix seconds.
  UtilPolicy(double min_util_pct, Millis window, double start);

  void add(const std::vector<GpuSample>& samples);

  // At unix time now: the reason to stop, e.g. "mean GPU utilization 3.2% over the last 5m00s
  // < 20%", or nullopt to let the job run.
  std::optional<std::string> check(double now);

  // The mean over the window ending at now, if any samples fall in it.
  std::optional<double> window_mean(double now) const;

 private:
  double min_util_;
  double window_s_;
  Millis window_;
  double start_;
  std::deque<GpuSample> samples_;  // those not yet older than the window, in arrival order
};

}  // namespace nodus::telemetry
