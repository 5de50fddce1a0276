#pragma once
// SeriesReader: one job's stored series visited row by row (a prepared statement stepped one
// row at a time), so a reader of a long job's series holds one row, not the series: the
// end-of-job summary of a 24 h 8-GPU job reads ~700k GPU samples. It reads through a connection
// of its own to the store's file, so the Store's lock is not held while a callback runs.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/samples.h"
#include "store/store.h"

namespace nodus::store {

class Db;

class SeriesReader {
 public:
  SeriesReader(const Store& store, int64_t job_id);
  ~SeriesReader();

  // The rows Store::gpu_samples() / host_samples() / metrics() return, in the same order (time,
  // then insertion), handed to `visit` one at a time.
  void gpu_samples(const std::function<void(const GpuSample&)>& visit);
  void host_samples(const std::function<void(const HostSample&)>& visit);
  void metrics(const std::function<void(const MetricPoint&)>& visit);
  // The earliest time of the job's metrics named one of `names` (min(t)); nullopt when none.
  std::optional<double> first_metric_t(const std::vector<std::string>& names);

 private:
  std::unique_ptr<Db> db_;
  int64_t job_id_;
};

}  // namespace nodus::store
