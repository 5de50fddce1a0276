#pragma once
// SlurmApi is the one place that knows how a slurmrestd API version spells things: request
// paths, the submit body, and the fields of its answers. The rest of the backend speaks only
// SubmitRequest and SlurmJob, so another version (v0.0.40 nests times and exit codes in
// objects, for one) is one more implementation of this interface.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace nodus::backend::slurm {

struct SubmitRequest {
  std::string script;  // the batch script, "#!/bin/bash\n..."
  std::string name;
  std::optional<int> time_limit_minutes;
  std::string working_dir;
  std::string output_path;                 // stdout; stderr goes to the same file
  std::map<std::string, std::string> env;  // the job's complete environment (Slurm adds SLURM_*)
  std::string gres;                        // "gpu:h100:2", "gpu:2" or ""
  std::string container;                   // OCI bundle, or ""
  std::string partition;                   // "" = the cluster's default
  std::string array;                       // "0-7%2", or "" for a plain job
  int nodes = 1;  // more than 1: that many nodes, one task per node (the script sruns them)
};

// One record of GET /job/{id} or /jobs: a job, or one task of an array job.
struct SlurmJob {
  int64_t job_id = 0;
  std::string name;
  std::string user_name;
  std::string state;  // job_state as Slurm writes it: PENDING, RUNNING, COMPLETED, ...
  std::string state_reason;
  double submit_time = 0;  // unix seconds; 0 = not set
  double start_time = 0;   // while PENDING: 0 or the scheduler's estimate
  double end_time = 0;     // while RUNNING: the time limit's end
  // The last suspend or resume (unix seconds; 0 = never). A job killed while SUSPENDED has
  // end_time == suspend_time: slurmctld records its end at its suspension.
  double suspend_time = 0;
  // Accounting only: when the run's last step (its batch step included) ended, which is when its
  // processes were gone; 0 = none recorded. Later than end_time for a job killed while
  // SUSPENDED, whose end slurmctld records at its suspension.
  double last_step_end = 0;
  int64_t exit_code = 0;           // the raw wait status of the batch script (768 = exit 3)
  int64_t time_limit_minutes = 0;  // 0 = none given (the partition's)
  int64_t array_job_id = 0;
  std::optional<int> array_task_id;  // this record's task, or none
  std::string array_task_string;     // tasks not yet started, e.g. "2-3%2", on the master record
  std::string standard_output;
};

// One entry of a response's "errors" list.
struct SlurmError {
  int64_t code = 0;  // error_code / error_number; 0 when absent
  std::string text;  // "Requested node configuration is not available"
  std::string description;
};

// "Requested node configuration is not available (2014)"; entries joined with "; ".
std::string to_string(const std::vector<SlurmError>& errors);

class SlurmApi {
 public:
  virtual ~SlurmApi() = default;
  virtual std::string_view version() const = 0;

  virtual std::string ping_path() const = 0;
  virtual std::string submit_path() const = 0;
  virtual std::string jobs_path() const = 0;
  virtual std::string job_path(int64_t job_id) const = 0;
  // DELETE target: cancels the job, or only signals it when `signal` ("TERM", "USR1") is given.
  // job_ref is a job id ("12") or one task of an array ("12_3").
  virtual std::string cancel_path(std::string_view job_ref, std::string_view signal) const = 0;
  // GET target for the job's records in Slurm's accounting (slurmdbd), which outlive slurmctld's
  // memory (MinJobAge): one record per run, so a requeued job has one per start.
  virtual std::string accounting_path(int64_t job_id) const = 0;

  virtual std::string submit_body(const SubmitRequest& request) const = 0;

  // Parsers of response bodies. A body that is not what the version answers is an Error that
  // says so; Slurm's own error lists are read by errors().
  virtual Result<int64_t> parse_submit(std::string_view body) const = 0;
  virtual Result<std::vector<SlurmJob>> parse_jobs(std::string_view body) const = 0;
  // The runs in an accounting answer as SlurmJob records in Slurm's order (oldest run first):
  // start_time 0 for a run that never started, end_time 0 while it runs; exit_code as a raw
  // wait status, as parse_jobs gives it.
  virtual Result<std::vector<SlurmJob>> parse_accounting(std::string_view body) const = 0;
  virtual std::vector<SlurmError> errors(std::string_view body) const = 0;
};

// The mapping for an API version ("v0.0.38"); an unknown version is an Error listing the known.
Result<std::unique_ptr<SlurmApi>> make_api(std::string_view version);

}  // namespace nodus::backend::slurm
