#pragma once
// Sweeps as Slurm job arrays: one submit with `array: "0-N%P"` runs cell i as task i, at most P
// at a time. The cell table travels inside the batch script (a bash `case` on
// SLURM_ARRAY_TASK_ID that exports the cell's env and execs its argv), so tasks need no shared
// file to find their cell and values stay data. GET /job/{array id} returns every task; tasks()
// turns that into one entry per cell. Per-task caps are the caller's: cancel_task() at the
// task's deadline, computed from its own start time.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/slurm/job_states.h"
#include "core/result.h"

namespace nodus::backend::slurm {

class RestClient;

struct ArrayCell {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // this cell's variables (NODUS_PARAM_*, ...)
};

struct ArraySpec {
  std::string name;  // unique: a retry looks the array up by it before submitting again
  std::vector<ArrayCell> cells;
  int parallel = 0;      // tasks running at once (the %P throttle); 0 = as many as fit
  std::string gpu_type;  // catalog type, mapped to the cluster's GRES type
  int gpu_count = 0;     // per task
  std::optional<int> time_limit_minutes;   // per task, Slurm's safety net
  std::string workdir;                     // "" = the configured Slurm workdir
  std::map<std::string, std::string> env;  // common to all tasks (PATH is added)
};

struct ArrayJob {
  int64_t id = 0;
  std::string name;
  std::string output_dir;
  // Task i's stdout and stderr: <output_dir>/<name>-<i>.out.
  std::string output_path(int index) const;
};

struct ArrayTask {
  int index = 0;
  int64_t array_id = 0;
  int64_t job_id = 0;  // the task's own Slurm job id; 0 while it waits with the rest
  std::string state;   // Slurm's job_state
  Phase phase = Phase::kQueued;
  double started_at = 0;           // 0 until it starts
  std::optional<Outcome> outcome;  // once final
};

// "0-3%2", "1,3,5-7", "0-9:3": the indices a task string names (throttle ignored).
std::vector<int> expand_task_string(std::string_view text);
// The batch script for all cells. Errors: an empty argv, an invalid variable name.
Result<std::string> array_script(const std::vector<ArrayCell>& cells);
// One entry per cell 0..count-1 from GET /job/{array id}'s records; tasks Slurm no longer
// lists are left out.
std::vector<ArrayTask> tasks_from_records(const std::vector<SlurmJob>& records, int64_t array_id,
                                          int count);

class SlurmArrays {
 public:
  explicit SlurmArrays(std::unique_ptr<RestClient> client);
  ~SlurmArrays();
  // Configured from the environment like the backend.
  static Result<std::unique_ptr<SlurmArrays>> from_config();

  Result<ArrayJob> submit(const ArraySpec& spec);
  Result<std::vector<ArrayTask>> tasks(const ArrayJob& array, int count);
  // Cancels one task ("<array>_<index>"), or signals it with `signal` ("TERM"); a task that is
  // still queued is cancelled either way.
  Result<void> cancel_task(const ArrayTask& task, std::string_view signal = "");
  // Cancels every task that has not ended, queued ones included.
  Result<void> cancel(const ArrayJob& array);

 private:
  std::unique_ptr<RestClient> client_;
};

}  // namespace nodus::backend::slurm
