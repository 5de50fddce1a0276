// Store: the sweeps table.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "store/impl.h"
#include "store/job_rows.h"

namespace nodus::store {
namespace {

const char* const kSelect =
    "SELECT id, name, backend, argv, definition, definition_hash, state, budget, created_at, "
    "ended_at, supervisor_pid, supervisor_start FROM sweeps ";

std::string dump(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

SweepRecord read_sweep(Db& db, const Stmt& s) {
  SweepRecord r;
  r.id = s.i64(0);
  r.name = s.text(1);
  r.backend = s.text(2);
  // A damaged column (a hand edit, a bad disk) is read empty and named, as for jobs.
  auto damaged = [&](const char* column, const char* why) {
    r.damaged += std::string(r.damaged.empty() ? "" : "; ") + "the store's " + column +
                 " of sweep s" + std::to_string(r.id) + " is unreadable (" + why + "): shown empty";
  };
  auto argv = parse_untrusted_json(s.text(3));
  if (argv.is_discarded()) {
    damaged("argv", "not JSON");
  } else {
    try {
      r.argv = argv.get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception&) {
      damaged("argv", "JSON of the wrong shape");
    }
  }
  r.definition = parse_untrusted_json(s.text(4));
  if (!r.definition->is_object()) {
    damaged("definition", r.definition->is_discarded() ? "not JSON" : "JSON of the wrong shape");
    r.definition = nlohmann::json::object();
  }
  r.definition_hash = s.text(5);
  r.state = s.text(6);
  r.budget = s.opt_f64(7);
  r.created_at = s.f64(8);
  r.ended_at = s.opt_f64(9);
  r.supervisor_pid = s.i64(10);
  r.supervisor_start = s.i64(11);
  return r;
}

// "s12" and "12" name sweep 12; anything else is a name.
std::optional<int64_t> parse_sweep_id(const std::string& text) {
  std::string digits = !text.empty() && (text[0] == 's' || text[0] == 'S') ? text.substr(1) : text;
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

}  // namespace

int64_t Store::insert_sweep(const SweepRecord& s) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  Transaction tx(db, Transaction::Mode::kImmediate);
  db.prepare(
        "INSERT INTO sweeps (name, backend, argv, definition, definition_hash, state, budget, "
        "created_at, ended_at, supervisor_pid, supervisor_start) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind_all(s.name, s.backend, dump(nlohmann::json(redact_argv(s.argv))), dump(*s.definition),
                s.definition_hash, s.state, s.budget, s.created_at, s.ended_at, s.supervisor_pid,
                s.supervisor_start)
      .run();
  int64_t id = db.last_insert_rowid();
  tx.commit();
  return id;
}

void Store::update_sweep(const SweepRecord& s) {
  auto lock = impl_->lock();
  Db& db = impl_->db;
  Transaction tx(db, Transaction::Mode::kImmediate);
  // A row read damaged keeps its stored argv and definition: the empty values it was read
  // with never replace them (it may still be repaired by hand).
  const int keep = s.damaged.empty() ? 0 : 1;
  db.prepare(
        "UPDATE sweeps SET name = ?, backend = ?, argv = CASE WHEN ? THEN argv ELSE ? END, "
        "definition = CASE WHEN ? THEN definition ELSE ? END, definition_hash = ?, state = ?, "
        "budget = ?, created_at = ?, ended_at = ?, supervisor_pid = ?, supervisor_start = ? "
        "WHERE id = ?")
      .bind_all(s.name, s.backend, keep, dump(nlohmann::json(redact_argv(s.argv))), keep,
                dump(*s.definition), s.definition_hash, s.state, s.budget, s.created_at, s.ended_at,
                s.supervisor_pid, s.supervisor_start, s.id)
      .run();
  if (db.changes() == 0) db.fail_message("no sweep " + std::to_string(s.id) + " to update");
  tx.commit();
}

std::optional<SweepRecord> Store::sweep(int64_t id) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare(std::string(kSelect) + "WHERE id = ?");
  stmt.bind(1, id);
  if (!stmt.step()) return std::nullopt;
  return read_sweep(impl_->db, stmt);
}

std::optional<SweepRecord> Store::find_sweep(const std::string& id_or_name) {
  auto lock = impl_->lock();
  if (auto id = parse_sweep_id(id_or_name))
    if (auto s = sweep(*id)) return s;
  auto stmt = impl_->db.prepare(std::string(kSelect) + "WHERE name = ? ORDER BY id DESC LIMIT 1");
  stmt.bind(1, id_or_name);
  if (!stmt.step()) return std::nullopt;
  return read_sweep(impl_->db, stmt);
}

std::vector<SweepRecord> Store::sweeps(int limit) {
  auto lock = impl_->lock();
  auto stmt = impl_->db.prepare(std::string(kSelect) + "ORDER BY id DESC LIMIT ?");
  stmt.bind(1, std::max(limit, 0));
  std::vector<SweepRecord> out;
  while (stmt.step()) out.push_back(read_sweep(impl_->db, stmt));
  return out;
}

}  // namespace nodus::store
