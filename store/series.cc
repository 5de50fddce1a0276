// Store: time series (metrics, GPU and host samples) and per-job stats. Each add_* call writes
// its whole batch in one transaction with one prepared statement: telemetry flushes often.
// A point whose required value is not finite (a job printing loss=nan) is dropped rather than
// failing the batch: NULL would break NOT NULL and inf would break JSON output later.

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "store/impl.h"
#include "store/job_rows.h"
#include "store/job_stats.h"

namespace nodus::store {

namespace {

// The inserts without their transaction: add_* wrap each in one, write_tick all in one.
void insert_metrics(Db& db, int64_t job_id, const std::vector<MetricPoint>& points) {
  auto stmt = db.prepare("INSERT INTO metrics (job_id, t, name, value) VALUES (?, ?, ?, ?)");
  for (const MetricPoint& p : points) {
    if (!std::isfinite(p.t) || !std::isfinite(p.value)) continue;
    stmt.bind_all(job_id, p.t, p.name, p.value).run();
    stmt.reset();
  }
}

void insert_gpu_samples(Db& db, int64_t job_id, const std::vector<GpuSample>& samples) {
  auto stmt = db.prepare(
      "INSERT INTO gpu_samples (job_id, t, gpu_index, util_gpu, util_mem, mem_used_mib, power_w, "
      "sm_clock_mhz, pcie_rx_kbs, pcie_tx_kbs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const GpuSample& s : samples) {
    if (!std::isfinite(s.t) || !std::isfinite(s.util_gpu)) continue;
    stmt.bind_all(job_id, s.t, s.gpu_index, s.util_gpu, s.util_mem, s.mem_used_mib, s.power_w,
                  s.sm_clock_mhz, s.pcie_rx_kbs, s.pcie_tx_kbs)
        .run();
    stmt.reset();
  }
}

void insert_host_samples(Db& db, int64_t job_id, const std::vector<HostSample>& samples) {
  auto stmt = db.prepare(
      "INSERT INTO host_samples (job_id, t, cpu_percent, cores, nprocs, rss_mib, "
      "max_process_cpu_percent) VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const HostSample& s : samples) {
    if (!std::isfinite(s.t) || !std::isfinite(s.cpu_percent) || !std::isfinite(s.rss_mib) ||
        !std::isfinite(s.max_process_cpu_percent))
      continue;
    stmt.bind_all(job_id, s.t, s.cpu_percent, s.cores, s.nprocs, s.rss_mib,
                  s.max_process_cpu_percent)
        .run();
    stmt.reset();
  }
}

}  // namespace

void Store::add_metrics(int64_t job_id, const std::vector<MetricPoint>& points) {
  if (points.empty()) return;
  auto lock = impl_->lock();
  Transaction tx(impl_->db, Transaction::Mode::kImmediate);
  insert_metrics(impl_->db, job_id, points);
  tx.commit();
}

void Store::write_tick(int64_t job_id, const SeriesBatch& batch) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  Transaction tx(db, Transaction::Mode::kImmediate);
  if (batch.heartbeat && std::isfinite(*batch.heartbeat))
    db.prepare("UPDATE jobs SET heartbeat_at = ? WHERE id = ?")
        .bind_all(*batch.heartbeat, job_id)
        .run();
  insert_gpu_samples(db, job_id, batch.gpu);
  insert_host_samples(db, job_id, batch.host);
  insert_metrics(db, job_id, batch.metrics);
  tx.commit();
}

std::optional<double> Store::heartbeat(int64_t job_id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare("SELECT heartbeat_at FROM jobs WHERE id = ?");
  stmt.bind(1, job_id);
  if (!stmt.step()) return std::nullopt;
  return stmt.opt_f64(0);
}

std::vector<MetricPoint> Store::metrics(int64_t job_id) {
  auto lock = impl_->lock();
  auto stmt =
      impl_->db.prepare("SELECT t, name, value FROM metrics WHERE job_id = ? ORDER BY t, rowid");
  stmt.bind(1, job_id);
  std::vector<MetricPoint> out;
  while (stmt.step()) out.push_back({stmt.f64(0), stmt.text(1), stmt.f64(2)});
  return out;
}

std::map<std::string, double> Store::last_metrics(int64_t job_id) {
  auto lock = impl_->lock();
  // The newest point of each name: the latest time, the last written among equal times.
  auto stmt = impl_->db.prepare(
      "SELECT name, value FROM metrics m WHERE job_id = ?1 AND rowid = (SELECT rowid FROM metrics "
      "WHERE job_id = ?1 AND name = m.name ORDER BY t DESC, rowid DESC LIMIT 1)");
  stmt.bind(1, job_id);
  std::map<std::string, double> out;
  while (stmt.step()) out[stmt.text(0)] = stmt.f64(1);
  return out;
}

void Store::add_gpu_samples(int64_t job_id, const std::vector<GpuSample>& samples) {
  if (samples.empty()) return;
  auto lock = impl_->lock();
  Transaction tx(impl_->db, Transaction::Mode::kImmediate);
  insert_gpu_samples(impl_->db, job_id, samples);
  tx.commit();
}

std::vector<GpuSample> Store::gpu_samples(int64_t job_id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare(
      "SELECT t, gpu_index, util_gpu, util_mem, mem_used_mib, power_w, sm_clock_mhz, "
      "pcie_rx_kbs, pcie_tx_kbs FROM gpu_samples WHERE job_id = ? ORDER BY t, rowid");
  stmt.bind(1, job_id);
  std::vector<GpuSample> out;
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
    out.push_back(s);
  }
  return out;
}

void Store::add_host_samples(int64_t job_id, const std::vector<HostSample>& samples) {
  if (samples.empty()) return;
  auto lock = impl_->lock();
  Transaction tx(impl_->db, Transaction::Mode::kImmediate);
  insert_host_samples(impl_->db, job_id, samples);
  tx.commit();
}

bool Store::has_series(int64_t job_id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare(
      "SELECT EXISTS (SELECT 1 FROM gpu_samples WHERE job_id = ?1) "
      "OR EXISTS (SELECT 1 FROM host_samples WHERE job_id = ?1) "
      "OR EXISTS (SELECT 1 FROM metrics WHERE job_id = ?1)");
  stmt.bind(1, job_id);
  return stmt.step() && stmt.i32(0) != 0;
}

std::vector<HostSample> Store::host_samples(int64_t job_id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare(
      "SELECT t, cpu_percent, cores, nprocs, rss_mib, max_process_cpu_percent FROM host_samples "
      "WHERE job_id = ? ORDER BY t, rowid");
  stmt.bind(1, job_id);
  std::vector<HostSample> out;
  while (stmt.step()) {
    HostSample s;
    s.t = stmt.f64(0);
    s.cpu_percent = stmt.f64(1);
    s.cores = stmt.i32(2);
    s.nprocs = stmt.i32(3);
    s.rss_mib = stmt.f64(4);
    s.max_process_cpu_percent = stmt.f64(5);
    out.push_back(s);
  }
  return out;
}

void Store::put_stats(const JobStats& stats) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  // Read-then-write: IMMEDIATE so two writers merging keys do not lose each other's.
  Transaction tx(db, Transaction::Mode::kImmediate);
  nlohmann::json merged = nlohmann::json::object();
  {
    auto stmt = db.prepare("SELECT json FROM job_stats WHERE job_id = ?");
    stmt.bind(1, stats.job_id);
    if (stmt.step())
      merged = parse_json_column(db, stmt.text(0), "job_stats", stats.job_id, "json");
  }
  if (!merged.is_object()) merged = nlohmann::json::object();
  if (stats.values.is_object()) merged.update(stats.values);
  db.prepare(
        "INSERT INTO job_stats (job_id, json) VALUES (?, ?) "
        "ON CONFLICT(job_id) DO UPDATE SET json = excluded.json")
      .bind_all(stats.job_id, merged.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .run();
  tx.commit();
}

std::optional<JobStats> Store::stats(int64_t job_id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare("SELECT json FROM job_stats WHERE job_id = ?");
  stmt.bind(1, job_id);
  if (!stmt.step()) return std::nullopt;
  return JobStats{job_id, parse_json_column(impl_->db, stmt.text(0), "job_stats", job_id, "json")};
}

}  // namespace nodus::store
