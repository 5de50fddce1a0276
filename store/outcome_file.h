#pragma once
// A job's outcome where the store cannot take it: "<log>.outcome", reserved (4 KiB allocated)
// by the supervisor before the job starts, so that writing into it later needs no free space.
// When the store cannot be written as the job ends (a full disk), the supervisor writes the
// outcome there; the next nodus command that can write the store records it from there
// (Store::reconcile_dead_supervisors), instead of recording the job "lost" and billing it to
// its last heartbeat.

#include <optional>
#include <string>

#include "core/job.h"

namespace nodus::store {

inline std::string outcome_path(const std::string& log_path) { return log_path + ".outcome"; }

// A new, allocated outcome file beside the log (0600); -1 when it cannot be made (no log, or the
// disk is full already: the store's own writes then fail before the job starts).
int reserve_outcome_file(const std::string& log_path);

// Writes state, exit code, signal, start and end, cost and note of `job` into the reserved file,
// in place, and syncs it. False when that failed too.
bool write_outcome_file(int fd, const JobRecord& job);

struct KeptOutcome {
  JobState state = JobState::kFailed;
  std::optional<int> exit_code;
  std::optional<int> signal;
  double ended_at = 0;
  std::string note;
};
// The outcome kept for job `job_id` beside `log_path`, if one was written for that job.
std::optional<KeptOutcome> read_outcome_file(const std::string& log_path, int64_t job_id);

}  // namespace nodus::store
