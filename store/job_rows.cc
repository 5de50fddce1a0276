#include "store/job_rows.h"

#include <array>
#include <charconv>

namespace nodus::store {
namespace {

// Every column but id, in binding and reading order.
constexpr std::array<const char*, 32> kColumns = {
    "name",
    "backend",
    "backend_id",
    "argv",
    "env",
    "workdir",
    "image",
    "gpu_type",
    "gpu_count",
    "gpu_indices",
    "inventory_source",
    "rate_per_gpu_hour",
    "max_cost",
    "timeout_ms",
    "grace_ms",
    "options",
    "state",
    "exit_code",
    "signal",
    "created_at",
    "started_at",
    "ended_at",
    "cost",
    "supervisor_pid",
    "supervisor_start",
    "log_path",
    "metrics_path",
    "note",
    "sweep_id",
    "cell_index",
    "cell_key",
    "params",
};

std::string build_select() {
  std::string sql = "SELECT id";
  for (const char* c : kColumns) sql += std::string(", ") + c;
  return sql + " FROM jobs ";
}

std::string build_insert() {
  std::string cols, params;
  for (size_t i = 0; i < kColumns.size(); ++i) {
    cols += (i ? ", " : "") + std::string(kColumns[i]);
    params += i ? ", ?" : "?";
  }
  return "INSERT INTO jobs (" + cols + ") VALUES (" + params + ")";
}

std::string build_update() {
  std::string sql = "UPDATE jobs SET ";
  for (size_t i = 0; i < kColumns.size(); ++i)
    sql += (i ? ", " : "") + std::string(kColumns[i]) + " = ?";
  return sql + " WHERE id = ?";
}

// The env as stored: values of secret-looking names and credentials inside URLs never reach the
// file, even if the caller forgot to redact them (core/secret.h is the policy).
nlohmann::json stored_env(const std::map<std::string, std::string>& env) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : env) out[name] = redact_env_value(name, value);
  return out;
}

}  // namespace

static void read_job_columns(Db& db, const Stmt& s, JobRecord& j);

const std::string& select_jobs_sql() {
  static const std::string sql = build_select();
  return sql;
}
const std::string& insert_job_sql() {
  static const std::string sql = build_insert();
  return sql;
}
const std::string& update_job_sql() {
  static const std::string sql = build_update();
  return sql;
}

std::string join_indices(const std::vector<int>& indices) {
  std::string out;
  for (size_t i = 0; i < indices.size(); ++i) out += (i ? "," : "") + std::to_string(indices[i]);
  return out;
}

std::vector<int> split_indices(const std::string& text) {
  std::vector<int> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    int v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) break;
    out.push_back(v);
    p = next;
    if (p < end && *p == ',') ++p;
  }
  return out;
}

int bind_job(Stmt& stmt, const JobRecord& j) {
  // Non-ASCII bytes are replaced, not thrown on: argv and env come from the user's shell.
  auto dump = [](const nlohmann::json& v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  stmt.bind_all(j.name, j.backend, j.backend_id, dump(nlohmann::json(j.argv)),
                dump(stored_env(j.env)), j.workdir, j.image, j.gpu_type, j.gpu_count,
                join_indices(j.gpu_indices), j.inventory_source, j.rate_per_gpu_hour, j.max_cost,
                j.timeout_ms, j.grace_ms, dump(j.options), std::string(to_string(j.state)),
                j.exit_code, j.signal, j.created_at, j.started_at, j.ended_at, j.cost,
                j.supervisor_pid, j.supervisor_start, j.log_path, j.metrics_path, j.note,
                j.sweep_id, j.cell_index, j.cell_key, dump(j.params));
  return static_cast<int>(kColumns.size()) + 1;
}

nlohmann::json parse_json_column(Db& db, const std::string& text, const char* table, int64_t id,
                                 const char* column) {
  auto v = nlohmann::json::parse(text, nullptr, false);
  if (v.is_discarded())
    db.fail_message(std::string(table) + " row " + std::to_string(id) + " has malformed " + column +
                    " (not JSON)");
  return v;
}

JobRecord read_job(Db& db, const Stmt& s) {
  JobRecord j;
  j.id = s.i64(0);
  try {
    read_job_columns(db, s, j);
  } catch (const nlohmann::json::exception& e) {  // valid JSON of the wrong shape
    db.fail_message("job " + std::to_string(j.id) + " has a malformed column: " + e.what());
  }
  return j;
}

// Column 0 is id; column i + 1 is kColumns[i].
static void read_job_columns(Db& db, const Stmt& s, JobRecord& j) {
  auto json = [&](int col, const char* name) {
    return parse_json_column(db, s.text(col), "jobs", j.id, name);
  };
  j.name = s.text(1);
  j.backend = s.text(2);
  j.backend_id = s.text(3);
  j.argv = json(4, "argv").get<std::vector<std::string>>();
  j.env = json(5, "env").get<std::map<std::string, std::string>>();
  j.workdir = s.text(6);
  j.image = s.text(7);
  j.gpu_type = s.text(8);
  j.gpu_count = s.i32(9);
  j.gpu_indices = split_indices(s.text(10));
  j.inventory_source = s.text(11);
  j.rate_per_gpu_hour = s.f64(12);
  j.max_cost = s.opt_f64(13);
  j.timeout_ms = s.opt_i64(14);
  j.grace_ms = s.i64(15);
  j.options = json(16, "options");
  std::string state = s.text(17);
  auto parsed = job_state_from_string(state);
  if (!parsed)
    db.fail_message("job " + std::to_string(j.id) + " has unknown state '" + state +
                    "' (written by a newer nodus?)");
  j.state = *parsed;
  if (auto v = s.opt_i64(18)) j.exit_code = static_cast<int>(*v);
  if (auto v = s.opt_i64(19)) j.signal = static_cast<int>(*v);
  j.created_at = s.f64(20);
  j.started_at = s.opt_f64(21);
  j.ended_at = s.opt_f64(22);
  j.cost = s.f64(23);
  j.supervisor_pid = s.i64(24);
  j.supervisor_start = s.i64(25);
  j.log_path = s.text(26);
  j.metrics_path = s.text(27);
  j.note = s.text(28);
  j.sweep_id = s.opt_i64(29);
  j.cell_index = s.i32(30);
  j.cell_key = s.text(31);
  j.params = json(32, "params");
}

std::vector<JobRecord> read_jobs(Db& db, Stmt& stmt) {
  std::vector<JobRecord> out;
  while (stmt.step()) out.push_back(read_job(db, stmt));
  return out;
}

}  // namespace nodus::store
