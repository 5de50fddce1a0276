// Store: spend summaries. A running job counts what it has cost so far (GPUs x rate x elapsed),
// since its stored cost is only final once it ends.

#include "store/impl.h"

namespace nodus::store {
namespace {

// Per-job figures as SQL expressions; ?1 = now.
const char* const kGpuHours =
    "sum(gpu_count * max(0.0, coalesce(ended_at, ?1) - started_at)) / 3600.0";
const char* const kCost =
    "sum(CASE WHEN ended_at IS NULL "
    "THEN gpu_count * rate_per_gpu_hour * max(0.0, ?1 - started_at) / 3600.0 ELSE cost END)";

std::vector<Store::SpendRow> spend(Db& db, const std::string& key, const std::string& where,
                                   const std::string& order, std::optional<double> since) {
  std::string sql = "SELECT " + key + " AS k, count(*), " + kGpuHours + ", " + kCost +
                    " FROM jobs WHERE started_at IS NOT NULL " + where +
                    (since ? " AND started_at >= ?2" : "") + " GROUP BY k ORDER BY " + order;
  auto stmt = db.prepare(sql);
  stmt.bind(1, unix_now());
  if (since) stmt.bind(2, *since);
  std::vector<Store::SpendRow> out;
  while (stmt.step()) out.push_back({stmt.text(0), stmt.i32(1), stmt.f64(2), stmt.f64(3)});
  return out;
}

}  // namespace

std::vector<Store::SpendRow> Store::spend_by_day(std::optional<double> since) {
  auto lock = impl_->lock();
  return spend(impl_->db, "date(started_at, 'unixepoch', 'localtime')", "", "k", since);
}

std::vector<Store::SpendRow> Store::spend_by_gpu(std::optional<double> since) {
  auto lock = impl_->lock();
  return spend(impl_->db, "gpu_type", "AND gpu_count > 0", "4 DESC, k", since);
}

}  // namespace nodus::store
