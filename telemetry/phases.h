#pragma once
// A job's phases: start-up (launch -> first batch), warm-up (the first N batches or seconds)
// and the steady state after it. Throughput, data wait, utilization and the diagnosis describe
// the steady state; cost and idle dollars stay whole-job, with start-up shown on its own.
//
// The boundaries need evidence that the training loop runs: the Python hook's first batch and
// end of warm-up, else the job's own first metrics report (its loop has run by then) plus the
// warm-up seconds. Without either, the phases are unknown and every figure is whole-job.

#include <optional>
#include <string>

#include "telemetry/summary.h"

namespace nodus::telemetry {

// --warmup: "20" is batches, "5s" / "1m" a duration.
struct Warmup {
  std::optional<int> batches;
  std::optional<double> seconds;
  std::string text = "5s";
};
// Parses --warmup; nullopt when malformed (the caller names the flag).
std::optional<Warmup> parse_warmup(const std::string& text);

struct Phases {
  double start_t = 0;  // launch, unix seconds
  double end_t = 0;
  std::optional<double> first_batch_t;
  std::optional<double> steady_t;  // end of warm-up
  std::string source;              // "instrumented", "job metrics", "" when unknown

  std::optional<double> startup_s() const;
  std::optional<double> warmup_s() const;
  std::optional<double> steady_s() const;
};

// The samples and reports from `from` on (cost and wall time untouched).
SummaryInput slice_from(const SummaryInput& in, double from);

// The steady-state summary: figures from the slice after phases.steady_t when there is one
// with GPU or metric data, cost, wall time and idle dollars from the whole job.
Summary steady_summary(const SummaryInput& whole, const Phases& phases);

// "start-up 9.1 s, $0.011; warm-up 5.0 s; steady 60.2 s (instrumented)" or "" when unknown.
std::string describe_phases(const Phases& phases, double rate_usd_per_s);

}  // namespace nodus::telemetry
