// Store: spend summaries. A running job counts what it has cost so far (GPUs x rate x elapsed),
// since its stored cost is only final once it ends.
//
// The day and GPU summaries walk the covering index jobs_spend in start order and aggregate here:
// grouping by local day in SQL would call localtime once per row (100k rows: ~60 ms), while
// walking in order needs one call per day boundary crossed. The sweep and name summaries walk
// jobs_spend_sweep and jobs_spend_name (migration 4), covering too, in group order: one group
// held at a time while reading, then one row per group.

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

// The billing columns every scan selects, in this order, from `first` on.
constexpr const char* kBilledColumns =
    "started_at, gpu_type, gpu_count, rate_per_gpu_hour, ended_at, cost";

// A started job's bill from a row holding kBilledColumns from column `first` on.
Billed bill(Stmt& stmt, int first, double now) {
  Billed b{stmt.f64(first), stmt.text(first + 1), stmt.i32(first + 2), 0, 0};
  double rate = stmt.f64(first + 3);
  std::optional<double> ended = stmt.opt_f64(first + 4);
  double seconds = std::max(0.0, ended.value_or(now) - b.started_at);
  b.gpu_hours = b.gpu_count * seconds / 3600.0;
  b.cost = ended ? stmt.f64(first + 5) : cost_usd(b.gpu_count, rate, seconds);
  return b;
}

void scan_started(Db& db, std::optional<double> since, std::optional<double> until,
                  const std::function<void(const Billed&)>& fn) {
  // Reads only the covering index.
  auto stmt = db.prepare(std::string("SELECT ") + kBilledColumns +
                         " FROM jobs INDEXED BY jobs_spend WHERE started_at >= ? AND "
                         "started_at < ? ORDER BY started_at");
  stmt.bind(1, since.value_or(-1e300));  // also leaves out never-started jobs (NULL)
  stmt.bind(2, until.value_or(1e300));
  const double now = unix_now();
  while (stmt.step()) fn(bill(stmt, 0, now));
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

// Rows keyed by `key`, most expensive first.
std::vector<Store::SpendRow> sorted_by_cost(std::map<std::string, Store::SpendRow>& by_key) {
  std::vector<Store::SpendRow> out;
  for (auto& [key, row] : by_key) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const Store::SpendRow& a, const Store::SpendRow& b) {
    return a.cost > b.cost;
  });
  return out;
}

// Every group's row, one group at a time: walks `index`, which starts with `column` and then
// holds jobs_spend's columns, so each group's jobs come together and in the order the other
// summaries add them (start order), and adds a group's row once its last job is read. `key`
// names a group from that column's value. Rows most expensive first; equal costs by key, as
// sorted_by_cost leaves them.
std::vector<Store::SpendRow> spend_by_group(Db& db, const char* index, const char* column,
                                            std::optional<double> since,
                                            std::optional<double> until,
                                            const std::function<std::string(Stmt&)>& key) {
  auto stmt = db.prepare(
      std::string("SELECT ") + column + ", " + kBilledColumns + " FROM jobs INDEXED BY " + index +
      " WHERE started_at >= ? AND started_at < ? ORDER BY " + column + ", " + kBilledColumns);
  stmt.bind(1, since.value_or(-1e300));  // also leaves out never-started jobs (NULL)
  stmt.bind(2, until.value_or(1e300));
  const double now = unix_now();
  std::vector<Store::SpendRow> out;
  while (stmt.step()) {
    std::string k = key(stmt);
    if (out.empty() || out.back().key != k) out.push_back({std::move(k)});
    add(out.back(), bill(stmt, 1, now));
  }
  std::sort(out.begin(), out.end(), [](const Store::SpendRow& a, const Store::SpendRow& b) {
    return a.cost != b.cost ? a.cost > b.cost : a.key < b.key;
  });
  return out;
}

}  // namespace

namespace {

// The by-day summary, fed the scan in start order: a new row at each local day crossed.
struct DayTotals {
  std::vector<Store::SpendRow> rows;
  double day_end = -1e300;
  void operator()(const Billed& b) {
    if (rows.empty() || b.started_at >= day_end) {
      auto [key, end] = local_day(b.started_at);
      day_end = end;
      if (rows.empty() || rows.back().key != key) rows.push_back({key});
    }
    add(rows.back(), b);
  }
};

// The by-GPU-type summary: CPU-only jobs under "" when with_cpu_only, else left out.
struct GpuTotals {
  bool with_cpu_only;
  std::map<std::string, Store::SpendRow> by_type;
  void operator()(const Billed& b) {
    if (b.gpu_count <= 0 && !with_cpu_only) return;
    std::string key = b.gpu_count > 0 ? b.gpu_type : "";
    Store::SpendRow& row = by_type[key];
    row.key = key;
    add(row, b);
  }
};

}  // namespace

std::vector<Store::SpendRow> Store::spend_by_day(std::optional<double> since,
                                                 std::optional<double> until) {
  auto lock = impl_->lock();
  DayTotals days;
  scan_started(impl_->db, since, until, std::ref(days));
  return std::move(days.rows);
}

std::vector<Store::SpendRow> Store::spend_by_gpu(std::optional<double> since,
                                                 std::optional<double> until, bool with_cpu_only) {
  auto lock = impl_->lock();
  GpuTotals gpus{with_cpu_only, {}};
  scan_started(impl_->db, since, until, std::ref(gpus));
  return sorted_by_cost(gpus.by_type);
}

std::pair<std::vector<Store::SpendRow>, std::vector<Store::SpendRow>> Store::spend_by_day_and_gpu(
    std::optional<double> since, std::optional<double> until, bool with_cpu_only) {
  auto lock = impl_->lock();
  DayTotals days;
  GpuTotals gpus{with_cpu_only, {}};
  scan_started(impl_->db, since, until, [&](const Billed& b) {
    days(b);
    gpus(b);
  });
  return {std::move(days.rows), sorted_by_cost(gpus.by_type)};
}

std::vector<Store::SpendRow> Store::spend_by_sweep(std::optional<double> since,
                                                   std::optional<double> until) {
  auto lock = impl_->lock();
  return spend_by_group(impl_->db, "jobs_spend_sweep", "sweep_id", since, until,
                        [](Stmt& stmt) -> std::string {
                          auto id = stmt.opt_i64(0);
                          return id ? "s" + std::to_string(*id) : "";  // "": not in a sweep
                        });
}

std::vector<Store::SpendRow> Store::spend_by_name(std::optional<double> since,
                                                  std::optional<double> until) {
  auto lock = impl_->lock();
  return spend_by_group(impl_->db, "jobs_spend_name", "name", since, until,
                        [](Stmt& stmt) { return stmt.text(0); });
}

}  // namespace nodus::store
