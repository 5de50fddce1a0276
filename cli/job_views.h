#pragma once
// How jobs look in listings: the `ps` table, and the fields `show` prints.

#include <vector>

#include "core/job.h"
#include "core/table.h"

namespace nodus::cli {

Table jobs_table(const std::vector<JobRecord>& jobs);
nlohmann::json job_json(const JobRecord& job);  // the stable JSON form of a job
// A job's stored stats in the json units of docs/output.md (fractions 0-1, cores).
nlohmann::json stats_json(const nlohmann::json& stored);
std::string gpu_label(const JobRecord& job);  // "2 x H100-SXM [0,1]" or "-"
double wall_seconds(const JobRecord& job);    // start to end (or now), 0 if never started

}  // namespace nodus::cli
