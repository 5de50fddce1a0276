#include "engine/series_source.h"

#include <algorithm>

#include "store/series_reader.h"

namespace nodus::engine {
namespace {

class StoreSeries : public SeriesSource {
 public:
  StoreSeries(store::Store& store, int64_t job_id) : reader_(store, job_id) {}
  void gpu(const std::function<void(const GpuSample&)>& visit) override {
    reader_.gpu_samples(visit);
  }
  void host(const std::function<void(const HostSample&)>& visit) override {
    reader_.host_samples(visit);
  }
  void metrics(const std::function<void(const MetricPoint&)>& visit) override {
    reader_.metrics(visit);
  }
  std::optional<double> first_metric_t(const std::vector<std::string>& names) override {
    return reader_.first_metric_t(names);
  }

 private:
  store::SeriesReader reader_;
};

template <typename T>
std::vector<T> by_time(std::vector<T> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const T& a, const T& b) { return a.t < b.t; });
  return rows;
}

class MemorySeries : public SeriesSource {
 public:
  explicit MemorySeries(const telemetry::SummaryInput& in)
      : gpu_(by_time(in.gpu)), host_(by_time(in.host)), metrics_(by_time(in.metrics)) {}
  void gpu(const std::function<void(const GpuSample&)>& visit) override {
    for (const auto& s : gpu_) visit(s);
  }
  void host(const std::function<void(const HostSample&)>& visit) override {
    for (const auto& s : host_) visit(s);
  }
  void metrics(const std::function<void(const MetricPoint&)>& visit) override {
    for (const auto& p : metrics_) visit(p);
  }
  std::optional<double> first_metric_t(const std::vector<std::string>& names) override {
    for (const auto& p : metrics_)
      if (std::find(names.begin(), names.end(), p.name) != names.end()) return p.t;
    return std::nullopt;
  }

 private:
  std::vector<GpuSample> gpu_;
  std::vector<HostSample> host_;
  std::vector<MetricPoint> metrics_;
};

}  // namespace

std::unique_ptr<SeriesSource> store_series(store::Store& store, int64_t job_id) {
  // A job with no stored series (one that ended before its first sample) is read from nothing:
  // the reader's own connection would cost a schema parse, about 1 ms of a short job's launch.
  if (!store.has_series(job_id)) return std::make_unique<MemorySeries>(telemetry::SummaryInput{});
  return std::make_unique<StoreSeries>(store, job_id);
}

std::unique_ptr<SeriesSource> memory_series(const telemetry::SummaryInput& in) {
  return std::make_unique<MemorySeries>(in);
}

}  // namespace nodus::engine
