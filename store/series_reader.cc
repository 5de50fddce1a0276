#include "store/series_reader.h"

#include <chrono>

#include "store/sqlite.h"

namespace nodus::store {

// The store's own busy timeout: a reader waits out another process's write transaction.
// Its page cache is small: each series is read once, in index order, so a cache of the default
// 2 MiB would only grow with the job's length until it was full (measured: the end-of-job peak
// of an 8-GPU job 200 KiB higher at 28k samples than at 14k).
SeriesReader::SeriesReader(const Store& store, int64_t job_id)
    : db_(std::make_unique<Db>(store.path(), std::chrono::seconds(10))), job_id_(job_id) {
  db_->exec("PRAGMA cache_size=-128");
}

SeriesReader::~SeriesReader() = default;

void SeriesReader::gpu_samples(const std::function<void(const GpuSample&)>& visit) {
  auto stmt = db_->prepare(
      "SELECT t, gpu_index, util_gpu, util_mem, mem_used_mib, power_w, sm_clock_mhz, "
      "pcie_rx_kbs, pcie_tx_kbs FROM gpu_samples WHERE job_id = ? ORDER BY t, rowid");
  stmt.bind(1, job_id_);
  while (stmt.step()) {
    GpuSample s;
    s.t = stmt.f64(0);
    s.gpu_index = stmt.i32(1);
    s.util_gpu = stmt.f64(2);
    s.util_mem = stmt.opt_f64(3);
    s.mem_used_mib = stmt.opt_f64(4);
    s.power_w = stmt.opt_f64(5);
    s.sm_clock_mhz = stmt.opt_f64(6);
    s.pcie_rx_kbs = stmt.opt_f64(7);
    s.pcie_tx_kbs = stmt.opt_f64(8);
    visit(s);
  }
}

void SeriesReader::host_samples(const std::function<void(const HostSample&)>& visit) {
  auto stmt = db_->prepare(
      "SELECT t, cpu_percent, cores, nprocs, rss_mib, max_process_cpu_percent FROM host_samples "
      "WHERE job_id = ? ORDER BY t, rowid");
  stmt.bind(1, job_id_);
  while (stmt.step()) {
    HostSample s;
    s.t = stmt.f64(0);
    s.cpu_percent = stmt.f64(1);
    s.cores = stmt.i32(2);
    s.nprocs = stmt.i32(3);
    s.rss_mib = stmt.f64(4);
    s.max_process_cpu_percent = stmt.f64(5);
    visit(s);
  }
}

void SeriesReader::metrics(const std::function<void(const MetricPoint&)>& visit) {
  auto stmt = db_->prepare("SELECT t, name, value FROM metrics WHERE job_id = ? ORDER BY t, rowid");
  stmt.bind(1, job_id_);
  MetricPoint p;
  while (stmt.step()) {
    p.t = stmt.f64(0);
    p.name = stmt.text(1);
    p.value = stmt.f64(2);
    visit(p);
  }
}

std::optional<double> SeriesReader::first_metric_t(const std::vector<std::string>& names) {
  if (names.empty()) return std::nullopt;
  std::string sql = "SELECT min(t) FROM metrics WHERE job_id = ? AND name IN (?";
  for (size_t i = 1; i < names.size(); ++i) sql += ", ?";
  sql += ")";
  auto stmt = db_->prepare(sql);
  stmt.bind(1, job_id_);
  for (size_t i = 0; i < names.size(); ++i) stmt.bind(static_cast<int>(i) + 2, names[i]);
  if (!stmt.step()) return std::nullopt;
  return stmt.opt_f64(0);
}

}  // namespace nodus::store
