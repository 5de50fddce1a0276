// Store: the jobs table (insert, update, lookups, listings, sweep cells).

#include <algorithm>

#include "store/impl.h"
#include "store/job_rows.h"

namespace nodus::store {
namespace {

const std::string kActive = "('waiting', 'starting', 'running')";

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

int64_t Store::insert_job(const JobRecord& job) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  Transaction tx(db, Transaction::Mode::kImmediate);
  auto stmt = db.prepare(insert_job_sql());
  bind_job(stmt, job);
  stmt.run();
  int64_t id = db.last_insert_rowid();
  tx.commit();
  return id;
}

void Store::update_job(const JobRecord& job) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  Transaction tx(db, Transaction::Mode::kImmediate);
  auto stmt = db.prepare(update_job_sql());
  stmt.bind(bind_job(stmt, job), job.id);
  stmt.run();
  if (db.changes() == 0) db.fail_message("no job " + std::to_string(job.id) + " to update");
  tx.commit();
}

std::optional<JobRecord> Store::job(int64_t id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare(select_jobs_sql() + "WHERE id = ?");
  stmt.bind(1, id);
  if (!stmt.step()) return std::nullopt;
  return read_job(impl_->db, stmt);
}

std::optional<JobRecord> Store::find_job(const std::string& id_or_name) {
  auto lock = impl_->lock();
  if (all_digits(id_or_name))
    if (auto j = job(std::stoll(id_or_name))) return j;
  auto stmt = impl_->db.prepare(select_jobs_sql() + "WHERE name = ? ORDER BY id DESC LIMIT 1");
  stmt.bind(1, id_or_name);
  if (!stmt.step()) return std::nullopt;
  return read_job(impl_->db, stmt);
}

namespace {

// Two shapes (with or without a sweep) so that each can use its index; both stay cached.
std::string sweep_condition(const JobFilter& filter) {
  return filter.sweep_id ? "sweep_id = ?1 " : "?1 IS NULL ";
}

// Every job of the filter's sweep (or outside sweeps), newest first; `select` is
// select_jobs_sql() or select_listed_jobs_sql().
Stmt all_jobs(Db& db, const JobFilter& filter, const std::string& select) {
  auto stmt = db.prepare(select + "WHERE " + sweep_condition(filter) + "ORDER BY id DESC");
  stmt.bind(1, filter.sweep_id);
  return stmt;
}

}  // namespace

std::vector<JobRecord> Store::jobs(const JobFilter& filter) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  if (filter.all) {
    auto stmt = all_jobs(db, filter, select_jobs_sql());
    return read_jobs(db, stmt);
  }
  const std::string sweep = sweep_condition(filter);
  Transaction tx(db, Transaction::Mode::kRead);  // one snapshot for both halves
  auto active = db.prepare(select_jobs_sql() + "WHERE state IN " + kActive + " AND " + sweep +
                           "ORDER BY id DESC");
  active.bind(1, filter.sweep_id);
  std::vector<JobRecord> out = read_jobs(db, active);
  auto finished = db.prepare(select_jobs_sql() + "WHERE state NOT IN " + kActive + " AND " + sweep +
                             "ORDER BY id DESC LIMIT ?2");
  finished.bind(1, filter.sweep_id).bind(2, std::max(filter.limit, 0));
  std::vector<JobRecord> done = read_jobs(db, finished);
  out.insert(out.end(), done.begin(), done.end());
  std::sort(out.begin(), out.end(),
            [](const JobRecord& a, const JobRecord& b) { return a.id > b.id; });
  return out;
}

void Store::each_job(const JobFilter& filter, int passes,
                     const std::function<void(int pass, const JobRecord&)>& each) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  if (!filter.all) {  // a few dozen rows: read once, inside jobs()'s own snapshot
    const std::vector<JobRecord> rows = jobs(filter);
    for (int pass = 0; pass < passes; ++pass)
      for (const JobRecord& job : rows) each(pass, job);
    return;
  }
  ScanCache small(db);
  Transaction tx(db, Transaction::Mode::kRead);  // every pass sees the same rows
  for (int pass = 0; pass < passes; ++pass) {
    auto stmt = all_jobs(db, filter, select_listed_jobs_sql());
    while (stmt.step()) each(pass, read_job(db, stmt, JobColumns::kListing));
  }
}

std::vector<JobRecord> Store::active_jobs() {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare(select_jobs_sql() + "WHERE state IN " + kActive + " ORDER BY id");
  return read_jobs(impl_->db, stmt);
}

std::vector<JobRecord> Store::sweep_cells(int64_t sweep_id) {
  auto lock = impl_->lock();
  // A retried cell has several attempts (rows); the newest one speaks for the cell.
  auto stmt = impl_->db.prepare(
      select_jobs_sql() +
      "WHERE id IN (SELECT max(id) FROM jobs WHERE sweep_id = ? GROUP BY cell_index) "
      "ORDER BY cell_index");
  stmt.bind(1, sweep_id);
  return read_jobs(impl_->db, stmt);
}

double Store::sweep_spent(int64_t sweep_id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare("SELECT total(cost) FROM jobs WHERE sweep_id = ?");
  stmt.bind(1, sweep_id);
  return stmt.step() ? stmt.f64(0) : 0.0;
}

}  // namespace nodus::store
