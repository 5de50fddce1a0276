#include "store/job_rows.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json_input.h"

namespace nodus::store {
namespace {

// Reading a column into a plain member: the type of the member picks the read.
void get(const Stmt& s, int c, std::string& v) { v = s.text(c); }
void get(const Stmt& s, int c, int& v) { v = s.i32(c); }
void get(const Stmt& s, int c, int64_t& v) { v = s.i64(c); }
void get(const Stmt& s, int c, double& v) { v = s.f64(c); }
void get(const Stmt& s, int c, std::optional<double>& v) { v = s.opt_f64(c); }
void get(const Stmt& s, int c, std::optional<int64_t>& v) { v = s.opt_i64(c); }
void get(const Stmt& s, int c, std::optional<int>& v) {
  if (auto x = s.opt_i64(c))
    v = static_cast<int>(*x);
  else
    v.reset();
}

// Non-ASCII bytes are replaced, not thrown on: argv and env come from the user's shell.
std::string dump(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json stored_env(const std::map<std::string, std::string>& env);

// One column of `jobs`: its name, how a JobRecord binds to it and how it is read back.
struct Column {
  const char* name;
  void (*bind)(Stmt& s, int param, const JobRecord& j);
  void (*read)(Db& db, const Stmt& s, int col, JobRecord& j);
};

template <auto Member>
constexpr Column plain(const char* name) {
  return {name, [](Stmt& s, int i, const JobRecord& j) { s.bind(i, j.*Member); },
          [](Db&, const Stmt& s, int c, JobRecord& j) { get(s, c, j.*Member); }};
}

// A JSON column of a job's row as `T`. A damaged one (not JSON, or JSON of another shape: a
// file edited by hand, a bad disk) does not make the whole listing unreadable: the job is read
// with that column empty, and its note says which column was lost and why.
// The columns read_job found damaged, for the note: read before the note column is.
thread_local std::string damaged_columns;

template <typename T>
T json_column(const std::string& text, const char* name, T empty = T()) {
  auto v = parse_untrusted_json(text);
  const char* why = "not JSON";
  if (!v.is_discarded()) {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      why = "JSON of the wrong shape";
    }
  }
  damaged_columns += std::string(damaged_columns.empty() ? "" : "; ") + "the store's " + name +
                     " of this job is unreadable (" + why + "): shown empty";
  return empty;
}

// Every column but id, in binding and reading order: the one list the INSERT, UPDATE and SELECT
// statements, bind_job and read_job all follow. A new column (after its migration in schema.cc)
// is one line here.
const Column kColumns[] = {
    plain<&JobRecord::name>("name"),
    plain<&JobRecord::backend>("backend"),
    plain<&JobRecord::backend_id>("backend_id"),
    {"argv",
     [](Stmt& s, int i, const JobRecord& j) {
       s.bind(i, dump(nlohmann::json(redact_argv(j.argv))));
     },
     [](Db& db, const Stmt& s, int c, JobRecord& j) {
       const std::string text = s.text(c);
       if (auto plain = plain_string_list(text))
         j.argv = std::move(*plain);
       else
         j.argv = json_column<std::vector<std::string>>(text, "argv");
     }},
    {"env", [](Stmt& s, int i, const JobRecord& j) { s.bind(i, dump(stored_env(j.env))); },
     [](Db& db, const Stmt& s, int c, JobRecord& j) {
       j.env = json_column<std::map<std::string, std::string>>(s.text(c), "env");
     }},
    plain<&JobRecord::workdir>("workdir"),
    plain<&JobRecord::image>("image"),
    plain<&JobRecord::gpu_type>("gpu_type"),
    plain<&JobRecord::gpu_count>("gpu_count"),
    {"gpu_indices",
     [](Stmt& s, int i, const JobRecord& j) { s.bind(i, join_indices(j.gpu_indices)); },
     [](Db&, const Stmt& s, int c, JobRecord& j) { j.gpu_indices = split_indices(s.text(c)); }},
    plain<&JobRecord::inventory_source>("inventory_source"),
    plain<&JobRecord::rate_per_gpu_hour>("rate_per_gpu_hour"),
    plain<&JobRecord::max_cost>("max_cost"),
    plain<&JobRecord::timeout_ms>("timeout_ms"),
    plain<&JobRecord::grace_ms>("grace_ms"),
    {"options", [](Stmt& s, int i, const JobRecord& j) { s.bind(i, dump(*j.options)); },
     [](Db& db, const Stmt& s, int c, JobRecord& j) {
       j.options = json_column<nlohmann::json>(s.text(c), "options", nlohmann::json::object());
     }},
    {"state", [](Stmt& s, int i, const JobRecord& j) { s.bind(i, to_string(j.state)); },
     [](Db& db, const Stmt& s, int c, JobRecord& j) {
       std::string state = s.text(c);
       auto parsed = job_state_from_string(state);
       if (!parsed)
         db.fail_message("job " + std::to_string(j.id) + " has unknown state '" + state +
                         "' (written by a newer nodus?)");
       j.state = *parsed;
     }},
    plain<&JobRecord::exit_code>("exit_code"),
    plain<&JobRecord::signal>("signal"),
    plain<&JobRecord::created_at>("created_at"),
    plain<&JobRecord::started_at>("started_at"),
    plain<&JobRecord::ended_at>("ended_at"),
    plain<&JobRecord::cost>("cost"),
    plain<&JobRecord::supervisor_pid>("supervisor_pid"),
    plain<&JobRecord::supervisor_start>("supervisor_start"),
    plain<&JobRecord::log_path>("log_path"),
    plain<&JobRecord::metrics_path>("metrics_path"),
    plain<&JobRecord::note>("note"),
    plain<&JobRecord::sweep_id>("sweep_id"),
    plain<&JobRecord::cell_index>("cell_index"),
    plain<&JobRecord::cell_key>("cell_key"),
    {"params", [](Stmt& s, int i, const JobRecord& j) { s.bind(i, dump(*j.params)); },
     [](Db&, const Stmt& s, int c, JobRecord& j) {
       j.params = json_column<nlohmann::json>(s.text(c), "params", nlohmann::json::object());
     }},
};
constexpr size_t kColumnCount = std::size(kColumns);

// What job_fields() (cli/job_views.cc) shows of a job, and what its figures are made of.
constexpr std::string_view kListed[] = {
    "name",     "argv",     "gpu_type",  "gpu_count",  "gpu_indices", "rate_per_gpu_hour",
    "max_cost", "state",    "exit_code", "created_at", "started_at",  "ended_at",
    "cost",     "sweep_id", "cell_index"};

// Per column of kColumns, in order: whether a listing reads it. Made on first use, not at the
// start of every nodus process.
const std::vector<bool>& listed_columns() {
  static const std::vector<bool> listed = [] {
    std::vector<bool> out;
    for (const Column& c : kColumns)
      out.push_back(std::find(std::begin(kListed), std::end(kListed), c.name) != std::end(kListed));
    return out;
  }();
  return listed;
}

std::string build_select(JobColumns columns) {
  std::string sql = "SELECT id";
  const std::vector<bool>& listed = listed_columns();
  for (size_t i = 0; i < kColumnCount; ++i)
    sql +=
        std::string(", ") + (columns == JobColumns::kAll || listed[i] ? kColumns[i].name : "NULL");
  return sql + " FROM jobs ";
}

std::string build_insert() {
  std::string cols, params;
  for (size_t i = 0; i < kColumnCount; ++i) {
    cols += (i ? ", " : "") + std::string(kColumns[i].name);
    params += i ? ", ?" : "?";
  }
  return "INSERT INTO jobs (" + cols + ") VALUES (" + params + ")";
}

std::string build_update() {
  std::string sql = "UPDATE jobs SET ";
  for (size_t i = 0; i < kColumnCount; ++i)
    sql += (i ? ", " : "") + std::string(kColumns[i].name) + " = ?";
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

static void read_job_columns(Db& db, const Stmt& s, JobRecord& j, JobColumns columns);

const std::string& select_jobs_sql() {
  static const std::string sql = build_select(JobColumns::kAll);
  return sql;
}
const std::string& select_listed_jobs_sql() {
  static const std::string sql = build_select(JobColumns::kListing);
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

std::optional<std::vector<std::string>> plain_string_list(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  std::vector<std::string> out;
  size_t i = 1;
  const size_t end = text.size() - 1;  // the ']'
  if (i == end) return out;
  for (;;) {
    if (text[i] != '"') return std::nullopt;
    const size_t from = ++i;
    while (i < end && text[i] != '"') {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c >= 0x7F || c == '\\') return std::nullopt;
      ++i;
    }
    if (i == end) return std::nullopt;  // unterminated
    out.emplace_back(text.substr(from, i - from));
    ++i;  // past the closing '"'
    if (i == end) return out;
    if (text[i] != ',' || ++i == end) return std::nullopt;
  }
}

int bind_job(Stmt& stmt, const JobRecord& j) {
  int param = 1;
  for (const Column& c : kColumns) c.bind(stmt, param++, j);
  return param;
}

nlohmann::json parse_json_column(Db& db, const std::string& text, const char* table, int64_t id,
                                 const char* column) {
  auto v = parse_untrusted_json(text);
  if (v.is_discarded())
    db.fail_message(std::string(table) + " row " + std::to_string(id) + " has malformed " + column +
                    " (not JSON)");
  return v;
}

JobRecord read_job(Db& db, const Stmt& s, JobColumns columns) {
  JobRecord j;
  j.id = s.i64(0);
  damaged_columns.clear();
  try {
    read_job_columns(db, s, j, columns);
  } catch (const nlohmann::json::exception& e) {  // valid JSON of the wrong shape
    db.fail_message("job " + std::to_string(j.id) + " has a malformed column: " + e.what());
  }
  if (!damaged_columns.empty())
    j.note = j.note.empty() ? damaged_columns : damaged_columns + "; " + j.note;
  return j;
}

// Column 0 is id; column i + 1 is kColumns[i].
static void read_job_columns(Db& db, const Stmt& s, JobRecord& j, JobColumns columns) {
  const std::vector<bool>& listed = listed_columns();
  for (size_t i = 0; i < kColumnCount; ++i)  // column 0 is id
    if (columns == JobColumns::kAll || listed[i])
      kColumns[i].read(db, s, static_cast<int>(i) + 1, j);
}

std::vector<JobRecord> read_jobs(Db& db, Stmt& stmt) {
  std::vector<JobRecord> out;
  while (stmt.step()) out.push_back(read_job(db, stmt));
  return out;
}

}  // namespace nodus::store
