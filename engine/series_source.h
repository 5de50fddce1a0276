#pragma once
// SeriesSource: a finished job's series as the end-of-job summary reads them, one row at a
// time in time order, never as a whole (a 24 h 8-GPU job is ~700k GPU samples: read back into
// vectors it made the supervisor's peak RSS grow with the job's length). From the store, each
// visit is one prepared statement stepped row by row.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/samples.h"
#include "store/store.h"
#include "telemetry/summary.h"

namespace nodus::engine {

class SeriesSource {
 public:
  virtual ~SeriesSource() = default;
  // Each row once, ordered by time (ties in insertion order); `visit` must not use the store.
  virtual void gpu(const std::function<void(const GpuSample&)>& visit) = 0;
  virtual void host(const std::function<void(const HostSample&)>& visit) = 0;
  virtual void metrics(const std::function<void(const MetricPoint&)>& visit) = 0;
  // The earliest time of a metric named one of `names`; nullopt when there is none.
  virtual std::optional<double> first_metric_t(const std::vector<std::string>& names) = 0;
};

// The job's rows in the store (read through a connection of its own when it has any).
std::unique_ptr<SeriesSource> store_series(store::Store& store, int64_t job_id);
// Series already in memory (recorded series in tests), visited in the same order the store
// would (stable-sorted by time).
std::unique_ptr<SeriesSource> memory_series(const telemetry::SummaryInput& in);

}  // namespace nodus::engine
