#pragma once
// How a JobRecord maps to a row of `jobs`: one column list drives the INSERT, UPDATE and SELECT
// statements, so the three cannot drift apart. JSON columns (argv, env, options, params) are
// text; gpu_indices is "0,1"; state is its name ("running").

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "store/sqlite.h"

namespace nodus::store {

// "SELECT id, name, ... FROM jobs " (append WHERE/ORDER BY).
const std::string& select_jobs_sql();
const std::string& insert_job_sql();
const std::string& update_job_sql();  // WHERE id = the last parameter

// The same SELECT with only the columns a listing (`ps`) shows, the others NULL: id, name, argv,
// GPU type, count and indices, rate, max cost, state, exit code, the three times, cost, sweep
// and cell. A row of it is read with read_job(..., JobColumns::kListing); the other members of
// the JobRecord keep their defaults. Skips the env, options and params JSON and the long texts.
const std::string& select_listed_jobs_sql();
enum class JobColumns { kAll, kListing };

// Binds every column but id, from parameter 1; returns the next free parameter.
int bind_job(Stmt& stmt, const JobRecord& job);
// Reads the current row of a select_jobs_sql() (kAll) or select_listed_jobs_sql() (kListing)
// statement.
JobRecord read_job(Db& db, const Stmt& stmt, JobColumns columns = JobColumns::kAll);
std::vector<JobRecord> read_jobs(Db& db, Stmt& stmt);

// A JSON list of strings in the form the store writes it (["python","train.py"], no spaces)
// when every string is printable ASCII without escapes: the strings, read without building a
// JSON tree (argv, for every row of a listing). nullopt for anything else (whitespace, escapes,
// other bytes or shapes, not JSON), for the JSON parser to read.
std::optional<std::vector<std::string>> plain_string_list(std::string_view text);

std::string join_indices(const std::vector<int>& indices);
std::vector<int> split_indices(const std::string& text);

// Parses a JSON column; throws Fatal naming the store, row and column when it is malformed.
nlohmann::json parse_json_column(Db& db, const std::string& text, const char* table, int64_t id,
                                 const char* column);

}  // namespace nodus::store
