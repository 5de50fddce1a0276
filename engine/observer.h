#pragma once
// JobObserver watches a running job for the supervisor: GPU and host samples, the metrics the
// job reports (NODUS_METRICS file and --metric-regex lines), the --min-util policy. Everything
// the job controls is processed within a budget per tick (lines scanned, file bytes parsed,
// points stored per metric: the rest is sampled, coalesced or counted), and each tick is one
// store transaction that also writes the supervisor's heartbeat. The end-of-job summary
// (utilization, idle dollars, throughput, phases, diagnosis) streams the stored series row by
// row into running aggregates (engine/series_source.h), so memory does not grow with the job's
// length.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/job.h"
#include "engine/supervise_options.h"
#include "store/store.h"

namespace nodus::engine {

class JobObserver {
 public:
  JobObserver(store::Store& store, const SuperviseOptions& options, bool attach);
  ~JobObserver();

  void on_started(const JobRecord& job);  // the job's processes exist now
  void on_line(std::string_view line);    // one output line, for --metric-regex
  void tick(const JobRecord& job);        // once per sample interval
  // Set once the --min-util policy says stop; the text says why.
  std::optional<std::string> low_util_reason() const;
  // Set once --measure's window of steady state is over; the text says so.
  std::optional<std::string> measured_reason() const;
  // Final flush; stores the summary as the job's stats and returns a one-line verdict for the
  // attached user ("" if nothing to say).
  std::string finish(const JobRecord& job);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nodus::engine
