// Store: GPU claims and the reconciliation of jobs whose supervisor died.
// A claim row names the supervisor process (pid + start time) that holds the GPU; a claim whose
// owner is gone is free, so a crashed supervisor never keeps a GPU for good.

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/cost.h"
#include "core/lifecycle.h"
#include "core/parse.h"
#include "store/gpu_locks.h"
#include "store/gpu_queue.h"
#include "store/impl.h"
#include "store/job_rows.h"
#include "store/outcome_file.h"

namespace nodus::store {
namespace {

struct Claim {
  int gpu_index;
  int64_t owner_pid;
  int64_t owner_start;
};

std::vector<Claim> all_claims(Db& db) {
  auto stmt =
      db.prepare("SELECT gpu_index, owner_pid, owner_start FROM gpu_claims ORDER BY gpu_index");
  std::vector<Claim> out;
  while (stmt.step()) out.push_back({stmt.i32(0), stmt.i64(1), stmt.i64(2)});
  return out;
}

// Deletes the claims of dead owners; returns the indices still held. Call inside a transaction.
// "2026-12-01 02:40:12 UTC": when a lost job's supervisor was last alive.
std::string utc_text(double unix_seconds) {
  time_t t = static_cast<time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::set<int> drop_dead_claims(Db& db) {
  std::set<int> held;
  for (const Claim& c : all_claims(db)) {
    if (process_alive(c.owner_pid, c.owner_start)) {
      held.insert(c.gpu_index);
      continue;
    }
    auto del = db.prepare("DELETE FROM gpu_claims WHERE gpu_index = ?");
    del.bind(1, c.gpu_index).run();
  }
  return held;
}

}  // namespace

std::optional<std::vector<int>> Store::claim_gpus(int64_t job_id, const std::string& type,
                                                  int count, const std::vector<Gpu>& inventory,
                                                  int64_t owner_pid, int64_t owner_start,
                                                  const GpuWaiter* waiting) {
  if (count <= 0) return std::vector<int>{};
  auto lock = impl_->lock();
  Db& db = impl_->db;
  // IMMEDIATE: this reads the free set and then writes to it; two processes must not both see
  // the same GPU free.
  Transaction tx(db, Transaction::Mode::kImmediate);
  std::set<int> held = drop_dead_claims(db);

  std::vector<Gpu> candidates;
  std::set<int> of_type;  // every GPU of the type, held or not: what a waiter could be given
  for (const Gpu& g : inventory) {
    if (to_lower(g.type) != to_lower(type)) continue;
    of_type.insert(g.index);
    if (!held.count(g.index)) candidates.push_back(g);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  candidates.erase(std::unique(candidates.begin(), candidates.end(),
                               [](const Gpu& a, const Gpu& b) { return a.index == b.index; }),
                   candidates.end());
  // Free in this store; now free on the machine: other stores' jobs hold the same GPUs through
  // the machine-wide lock files (gpu_locks.h), which this process then holds for the job.
  // All or none, and a failed attempt leaves the lock files untouched (gpu_locks.h).
  std::vector<int> wanted;
  for (const Gpu& g : candidates) wanted.push_back(g.index);
  // And first come, first served: what an older waiter needs stays free (gpu_queue.h).
  const int leave = gpus_to_leave(type, static_cast<int>(of_type.size()), waiting);
  auto picked = lock_gpus(wanted, count, job_id, path(), leave);
  if (!picked) {
    tx.commit();  // keep the cleanup of dead claims
    return std::nullopt;
  }
  std::vector<int> indices;
  try {
    for (int index : *picked) {
      const Gpu& g = *std::find_if(candidates.begin(), candidates.end(),
                                   [index](const Gpu& c) { return c.index == index; });
      auto ins = db.prepare(
          "INSERT INTO gpu_claims (gpu_index, gpu_type, job_id, owner_pid, owner_start) "
          "VALUES (?, ?, ?, ?, ?)");
      ins.bind_all(g.index, g.type, job_id, owner_pid, owner_start).run();
      indices.push_back(g.index);
    }
    auto upd = db.prepare("UPDATE jobs SET gpu_indices = ? WHERE id = ?");
    upd.bind_all(join_indices(indices), job_id).run();
    tx.commit();
  } catch (...) {
    unlock_gpus(job_id, path());
    throw;
  }
  return indices;
}

void Store::release_gpus(int64_t job_id) {
  // The rows first, then the machine-wide locks (a no-op in any process but the claimant): a
  // waiter woken by the lock file's change (GpuReleaseWatch) finds the rows gone too. The locks
  // go even when the rows cannot.
  struct Unlock {
    int64_t job_id;
    const std::string& store;
    ~Unlock() { unlock_gpus(job_id, store); }
  } unlock{job_id, path()};
  auto lock = impl_->lock();
  Db& db = impl_->db;
  Transaction tx(db, Transaction::Mode::kImmediate);
  db.prepare("DELETE FROM gpu_claims WHERE job_id = ?").bind(1, job_id).run();
  tx.commit();
}

std::vector<int> Store::claimed_gpus() {
  auto lock = impl_->lock();
  std::vector<int> out;
  for (const Claim& c : all_claims(impl_->db))
    if (process_alive(c.owner_pid, c.owner_start)) out.push_back(c.gpu_index);
  return out;
}

std::vector<int64_t> Store::reconcile_dead_supervisors() {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  Transaction tx(db, Transaction::Mode::kImmediate);
  struct Dead {
    int64_t id;
    double ended_at;
    double cost;
    std::string note;
    std::optional<KeptOutcome> kept;  // what its supervisor could not write here
  };
  std::vector<Dead> dead;
  const double now = unix_now();
  {
    auto stmt = db.prepare(
        "SELECT id, supervisor_pid, supervisor_start, gpu_count, rate_per_gpu_hour, started_at, "
        "note, heartbeat_at, max_cost, timeout_ms, grace_ms, options, log_path FROM jobs "
        "WHERE state IN ('waiting', 'starting', 'running') AND backend = 'local'");
    while (stmt.step()) {
      if (process_alive(stmt.i64(1), stmt.i64(2))) continue;
      Dead d{stmt.i64(0), now, 0.0, stmt.text(6), std::nullopt};
      auto started = stmt.opt_f64(5);
      auto heartbeat = stmt.opt_f64(7);
      std::string why;
      // Its cost cap: --max-cost, or the sweep's budget share when that is lower.
      const std::optional<double> cap = effective_cap(
          stmt.opt_f64(8), budget_cap_of(nlohmann::json::parse(stmt.text(11), nullptr, false)));
      const std::optional<double> killed =
          started ? read_sentinel_end(stmt.text(12)) : std::nullopt;
      d.kept = started ? read_outcome_file(stmt.text(12), d.id) : std::nullopt;
      if (d.kept) {
        // The supervisor saw the job end but could not write the store (a full disk): its
        // outcome, billed as it would have billed it, from no earlier than the last heartbeat.
        double end = std::min(now, std::max({d.kept->ended_at, *started, heartbeat.value_or(0.0)}));
        d.ended_at = end;
        d.cost = cost_usd(stmt.i32(3), stmt.f64(4), end - *started);
        if (!d.kept->note.empty()) d.note = d.kept->note;
        why = "recorded at " + utc_text(now) +
              " from its outcome file: the store could not be written when it ended";
        if (cap && d.cost > *cap) why += " (" + format_usd(d.cost - *cap) + " past its cap)";
      } else if (started && killed) {
        // Its sentinel killed the tree when the supervisor died and wrote down when: it ran
        // until then, whatever the heartbeats said, so that is the bill, past the cap or not.
        // Never before its last heartbeat (a planted file cannot lower the bill), nor after now.
        double end = std::min(now, std::max({*killed, *started, heartbeat.value_or(0.0)}));
        d.ended_at = end;
        d.cost = cost_usd(stmt.i32(3), stmt.f64(4), end - *started);
        why =
            "supervisor died; its sentinel killed the job at " + utc_text(end) + "; billed to then";
        if (cap && d.cost > *cap) why += " (" + format_usd(d.cost - *cap) + " past its cap)";
      } else if (started) {
        // Nobody saw the job end; it died with its supervisor, whose last sign of life is its
        // heartbeat. Without one (an older nodus), the time it was found dead is all we know.
        double end = heartbeat ? std::max(*heartbeat, *started) : now;
        // The job could not have run past its timeout plus grace: the supervisor kills it then.
        if (auto timeout_ms = stmt.opt_i64(9))
          end = std::min(end, *started + (*timeout_ms + stmt.i64(10)) / 1000.0);
        d.ended_at = end;
        d.cost = cost_usd(stmt.i32(3), stmt.f64(4), std::max(0.0, end - *started));
        bool capped = cap && d.cost > *cap;
        if (capped) d.cost = *cap;
        why = heartbeat ? "supervisor died; billed to its last heartbeat at " + utc_text(end)
                        : "supervisor died; billed up to the time it was found dead";
        if (capped) why += " (capped at " + format_usd(*cap) + ")";
      } else {
        why = "supervisor died before the job started; not billed";
      }
      d.note = d.note.empty() ? why : d.note + "; " + why;
      dead.push_back(std::move(d));
    }
  }
  std::vector<int64_t> ids;
  for (const Dead& d : dead) {
    // Lost, or the end its supervisor saw and could not write: an end like any other
    // (core/lifecycle.h), its state and exit code decided there.
    JobRecord end;
    end.note = d.note;
    end_job(end, d.kept ? JobEnd{d.kept->state, d.ended_at, d.kept->exit_code, ""}
                        : JobEnd{JobState::kLost, d.ended_at, std::nullopt, ""});
    db.prepare(
          "UPDATE jobs SET state = ?, exit_code = ?, signal = ?, ended_at = ?, cost = ?, "
          "note = ? WHERE id = ?")
        .bind_all(std::string(to_string(end.state)), end.exit_code,
                  d.kept ? d.kept->signal : std::optional<int>{}, d.ended_at, d.cost, end.note,
                  d.id)
        .run();
    db.prepare("DELETE FROM gpu_claims WHERE job_id = ?").bind(1, d.id).run();
    ids.push_back(d.id);
  }
  tx.commit();
  return ids;
}

}  // namespace nodus::store
