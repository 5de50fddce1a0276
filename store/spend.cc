// Store: spend summaries. A running job counts what it has cost so far (GPUs x rate x elapsed),
// since its stored cost is only final once it ends.
//
// Both summaries walk the covering index jobs_spend in start order and aggregate here: grouping
// by local day in SQL would call localtime once per row (100k rows: ~60 ms), while walking in
// order needs one call per day boundary crossed.

#include <algorithm>
#include <ctime>
#include <functional>
#include <map>

#include "core/cost.h"
#include "store/impl.h"

namespace nodus::store {
namespace {

struct Billed {
  double started_at;
  std::string gpu_type;
  int gpu_count;
  double gpu_hours;
  double cost;
};

void scan_started(Db& db, std::optional<double> since,
                  const std::function<void(const Billed&)>& fn) {
  auto stmt = db.prepare(
      "SELECT started_at, gpu_type, gpu_count, rate_per_gpu_hour, ended_at, cost FROM jobs "
      "INDEXED BY jobs_spend WHERE started_at >= ? ORDER BY started_at");
  stmt.bind(1, since.value_or(-1e300));  // also leaves out never-started jobs (NULL)
  const double now = unix_now();
  while (stmt.step()) {
    Billed b{stmt.f64(0), stmt.text(1), stmt.i32(2), 0, 0};
    double rate = stmt.f64(3);
    std::optional<double> ended = stmt.opt_f64(4);
    double seconds = std::max(0.0, ended.value_or(now) - b.started_at);
    b.gpu_hours = b.gpu_count * seconds / 3600.0;
    b.cost = ended ? stmt.f64(5) : cost_usd(b.gpu_count, rate, seconds);
    fn(b);
  }
}

// The local day holding t: its "YYYY-MM-DD" and the unix time the next local day starts.
std::pair<std::string, double> local_day(double t) {
  time_t secs = static_cast<time_t>(t);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char key[16];
  std::strftime(key, sizeof key, "%Y-%m-%d", &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  tm.tm_mday += 1;
  tm.tm_isdst = -1;  // the next midnight may be on the other side of a DST change
  return {key, static_cast<double>(std::mktime(&tm))};
}

void add(Store::SpendRow& row, const Billed& b) {
  row.jobs += 1;
  row.gpu_hours += b.gpu_hours;
  row.cost += b.cost;
}

}  // namespace

std::vector<Store::SpendRow> Store::spend_by_day(std::optional<double> since) {
  auto lock = impl_->lock();
  std::vector<SpendRow> out;
  double day_end = -1e300;
  scan_started(impl_->db, since, [&](const Billed& b) {
    if (out.empty() || b.started_at >= day_end) {
      auto [key, end] = local_day(b.started_at);
      day_end = end;
      if (out.empty() || out.back().key != key) out.push_back({key});
    }
    add(out.back(), b);
  });
  return out;
}

std::vector<Store::SpendRow> Store::spend_by_gpu(std::optional<double> since) {
  auto lock = impl_->lock();
  std::map<std::string, SpendRow> by_type;
  scan_started(impl_->db, since, [&](const Billed& b) {
    if (b.gpu_count <= 0) return;  // CPU-only jobs cost nothing per GPU-hour
    SpendRow& row = by_type[b.gpu_type];
    row.key = b.gpu_type;
    add(row, b);
  });
  std::vector<SpendRow> out;
  for (auto& [type, row] : by_type) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(),
                   [](const SpendRow& a, const SpendRow& b) { return a.cost > b.cost; });
  return out;
}

}  // namespace nodus::store
