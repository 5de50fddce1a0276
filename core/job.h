#pragma once
// JobRecord is one job as the store keeps it: what was asked, where it ran, how it ended.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_value.h"
#include "core/secret.h"  // is_secret_name, kRedacted: the policy for env

namespace nodus {

// waiting: row written, GPUs not yet free.  starting: GPUs held, process being started.
// running: the job's process runs.  The rest are final; a final state never changes.
enum class JobState {
  kWaiting,
  kStarting,
  kRunning,
  kCompleted,  // exited 0
  kFailed,     // exited non-zero, or could not start
  kTimeout,    // stopped by --timeout
  kCostCap,    // stopped by --max-cost
  kBudget,     // stopped by its sweep's --budget
  kLowUtil,    // stopped by --min-util
  kStopped,    // `nodus stop`
  kCancelled,  // Ctrl-C on an attached run
  kLost,       // its supervisor died; state unknown
  kTampered,   // killed because something (the job, as a rule) killed or stopped nodus's own
               // enforcers: its sentinel, or its supervisor for longer than a moment
};

std::string_view to_string(JobState s);
std::optional<JobState> job_state_from_string(std::string_view s);
bool is_final(JobState s);
// An end that is a failure, not a stop: it exited non-zero or could not start, its supervisor
// died (lost), or it was tampered with. Limits and users stop jobs; they do not fail them.
bool is_failure(JobState s);

struct JobRecord {
  int64_t id = 0;
  std::string name;
  std::string backend = "local";
  std::string backend_id;  // pid (local) or Slurm job id
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the user's --env, secret-looking values redacted
  std::string workdir;
  std::string image;

  std::string gpu_type;  // catalog type, "" for CPU-only
  int gpu_count = 0;
  std::vector<int> gpu_indices;
  std::string inventory_source;  // "nvidia-smi", "NODUS_LOCAL_GPUS", "slurm", ...
  double rate_per_gpu_hour = 0;  // USD
  std::optional<double> max_cost;
  std::optional<int64_t> timeout_ms;
  int64_t grace_ms = 10'000;
  JsonValue options;  // other run options (min_util, ...), a JSON object

  JobState state = JobState::kWaiting;
  std::optional<int> exit_code;  // what `nodus run` returned / would return
  std::optional<int> signal;     // terminating signal of the job's main process
  double created_at = 0;         // unix seconds
  std::optional<double> started_at;
  std::optional<double> ended_at;
  double cost = 0;  // USD, billed per second from start to end

  int64_t supervisor_pid = 0;
  int64_t supervisor_start = 0;  // /proc/<pid>/stat starttime, guards against pid reuse
  std::string log_path;
  std::string metrics_path;
  std::string note;  // e.g. the leftover-GPU-process check after a stop

  std::optional<int64_t> sweep_id;
  int cell_index = -1;
  std::string cell_key;
  JsonValue params;  // the cell's parameters, a JSON object

  double gpu_seconds() const;  // gpu_count x (ended_at or now - started_at)
};

double unix_now();

// The exit status nodus reports for a job in a final state: the one state -> exit code table
// (core/error.h's exit_code constants; a failed job's own status; 143 for `nodus stop`).
int exit_status_for(const JobRecord& job);

// The share of its sweep's --budget a job was granted (its options' "budget_cap"), if any.
std::optional<double> budget_cap_of(const nlohmann::json& options);
inline std::optional<double> budget_cap_of(const JobRecord& job) {
  return budget_cap_of(*job.options);
}

// The nodes a job runs on (its options' "nodes", --nodes; 1 when absent). A multi-node job's
// gpu_count is all its nodes' GPUs together, nodes x the GPUs of each, so that its bill and its
// caps are GPUs x rate x wall time for the whole allocation, as for one node.
int nodes_of(const nlohmann::json& options);
inline int nodes_of(const JobRecord& job) { return nodes_of(*job.options); }

// Beside a local job's log: when its sentinel killed the job's tree, because its supervisor died
// or was stopped, or at the job's deadline (unix seconds, as text). Written through a descriptor
// the supervisor opened before the job started; read when a dead or stopped supervisor is
// reconciled, so the bill runs to that moment.
inline std::string end_time_path(const std::string& log_path) { return log_path + ".end"; }

// What the sentinel wrote there; nullopt when nothing (or nothing a time) is there.
std::optional<double> read_sentinel_end(const std::string& log_path);

}  // namespace nodus
