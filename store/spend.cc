// Store: spend summaries. A running job counts what it has cost so far (GPUs x rate x elapsed),
// since its stored cost is only final once it ends.
//
// The day and GPU summaries walk the covering index jobs_spend in start order and aggregate here:
// grouping by local day in SQL would call localtime once per row (100k rows: ~60 ms), while
// walking in order needs one call per day boundary crossed. The sweep and name summaries walk
// jobs_spend_sweep and jobs_spend_name (migration 4), covering too, in group order: one group
// held at a time, its row then sorted by SQLite (each_group).

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
  std::string_view gpu_type;  // the row's text: valid until the scan steps on
  int gpu_count;
  double gpu_hours;
  double cost;
};

// The billing columns every scan selects, in this order, from `first` on.
constexpr const char* kBilledColumns =
    "started_at, gpu_type, gpu_count, rate_per_gpu_hour, ended_at, cost";

// A started job's bill from a row holding kBilledColumns from column `first` on.
Billed bill(Stmt& stmt, int first, double now) {
  Billed b{stmt.f64(first), stmt.text_view(first + 1), stmt.i32(first + 2), 0, 0};
  double rate = stmt.f64(first + 3);
  std::optional<double> ended = stmt.opt_f64(first + 4);
  double seconds = std::max(0.0, ended.value_or(now) - b.started_at);
  b.gpu_hours = b.gpu_count * seconds / 3600.0;
  b.cost = ended ? stmt.f64(first + 5) : cost_usd(b.gpu_count, rate, seconds);
  return b;
}

void scan_started(Db& db, std::optional<double> since, std::optional<double> until,
                  const std::function<void(const Billed&)>& fn) {
  // Reads only the covering index, each page once.
  ScanCache small(db);
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
std::vector<Store::SpendRow> sorted_by_cost(
    std::map<std::string, Store::SpendRow, std::less<>>& by_key) {
  std::vector<Store::SpendRow> out;
  for (auto& [key, row] : by_key) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const Store::SpendRow& a, const Store::SpendRow& b) {
    return a.cost > b.cost;
  });
  return out;
}

// Every group's row, most expensive first (equal costs by key, as sorted_by_cost leaves them),
// handed to `each` `passes` times. Walks `index`, which starts with `column` and then holds
// jobs_spend's columns, so each group's jobs come together and in the order the other summaries
// add them (start order): one group is held at a time, `key` naming it from the column's value.
// Each group's row goes to a temporary table as its last job is read, and SQLite's sorter
// orders them: both keep to their page caches and spill to temporary files beyond, so memory
// stays flat however many groups (`--by name` over 100k jobs of as many names).
void each_group(Db& db, const char* index, const char* column, std::optional<double> since,
                std::optional<double> until, const std::function<std::string(Stmt&)>& key,
                int passes, const std::function<void(int pass, const Store::SpendRow&)>& each) {
  db.exec(
      "CREATE TEMP TABLE IF NOT EXISTS spend_groups (key TEXT NOT NULL, jobs INTEGER NOT NULL, "
      "gpu_hours REAL NOT NULL, cost REAL NOT NULL); DELETE FROM temp.spend_groups");
  ScanCache small(db);
  Transaction tx(db, Transaction::Mode::kRead);  // one snapshot; temp rows written in one go
  {
    auto walk = db.prepare(
        std::string("SELECT ") + column + ", " + kBilledColumns + " FROM jobs INDEXED BY " + index +
        " WHERE started_at >= ? AND started_at < ? ORDER BY " + column + ", " + kBilledColumns);
    walk.bind(1, since.value_or(-1e300));  // also leaves out never-started jobs (NULL)
    walk.bind(2, until.value_or(1e300));
    auto insert = db.prepare("INSERT INTO temp.spend_groups VALUES (?, ?, ?, ?)");
    auto flush = [&](const Store::SpendRow& row) {
      insert.bind_all(row.key, row.jobs, row.gpu_hours, row.cost).run();
      insert.reset();
    };
    const double now = unix_now();
    std::optional<Store::SpendRow> group;
    while (walk.step()) {
      std::string k = key(walk);
      if (group && group->key != k) flush(*group);
      if (!group || group->key != k) group = Store::SpendRow{std::move(k)};
      add(*group, bill(walk, 1, now));
    }
    if (group) flush(*group);
  }
  for (int pass = 0; pass < passes; ++pass) {
    auto rows = db.prepare(
        "SELECT key, jobs, gpu_hours, cost FROM temp.spend_groups ORDER BY cost DESC, key");
    while (rows.step()) each(pass, {rows.text(0), rows.i32(1), rows.f64(2), rows.f64(3)});
  }
  db.exec("DELETE FROM temp.spend_groups");
  tx.commit();
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
  std::map<std::string, Store::SpendRow, std::less<>> by_type;
  void operator()(const Billed& b) {
    if (b.gpu_count <= 0 && !with_cpu_only) return;
    std::string_view key = b.gpu_count > 0 ? b.gpu_type : "";
    auto it = by_type.find(key);  // no string made for a type already seen
    if (it == by_type.end()) it = by_type.emplace(key, Store::SpendRow{std::string(key)}).first;
    add(it->second, b);
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

namespace {

std::string sweep_key(Stmt& stmt) {
  auto id = stmt.opt_i64(0);
  return id ? "s" + std::to_string(*id) : "";  // "": not in a sweep
}

std::string name_key(Stmt& stmt) { return stmt.text(0); }

}  // namespace

void Store::each_spend_by_sweep(std::optional<double> since, std::optional<double> until,
                                int passes,
                                const std::function<void(int pass, const SpendRow&)>& each) {
  auto lock = impl_->lock();
  each_group(impl_->db, "jobs_spend_sweep", "sweep_id", since, until, sweep_key, passes, each);
}

void Store::each_spend_by_name(std::optional<double> since, std::optional<double> until, int passes,
                               const std::function<void(int pass, const SpendRow&)>& each) {
  auto lock = impl_->lock();
  each_group(impl_->db, "jobs_spend_name", "name", since, until, name_key, passes, each);
}

std::vector<Store::SpendRow> Store::spend_by_sweep(std::optional<double> since,
                                                   std::optional<double> until) {
  std::vector<SpendRow> rows;
  each_spend_by_sweep(since, until, 1, [&](int, const SpendRow& row) { rows.push_back(row); });
  return rows;
}

std::vector<Store::SpendRow> Store::spend_by_name(std::optional<double> since,
                                                  std::optional<double> until) {
  std::vector<SpendRow> rows;
  each_spend_by_name(since, until, 1, [&](int, const SpendRow& row) { rows.push_back(row); });
  return rows;
}

}  // namespace nodus::store
