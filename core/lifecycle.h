#pragma once
// The one place a job's state changes. A job goes waiting -> starting -> running (a cluster job
// Slurm requeues goes back to waiting) and ends in one of the final states; every writer of a
// job's state calls `move_job` or `end_job`, so what an end carries is decided here once: its
// time, its exit code (a failed job's own status, every other state's from exit_status_for's
// table) and the note that says why. The bill is not decided here: the engine's billed_cost and
// the Slurm backend's run segments set `cost`, and an end past the cap says so in its note.

#include <optional>
#include <string>
#include <utility>

#include "core/job.h"

namespace nodus {

// Moves a job that has not ended to `to`: waiting, starting or running. A job that has ended
// keeps its end, and a final `to` is end_job's: both return false and change nothing.
bool move_job(JobRecord& job, JobState to);

struct JobEnd {
  JobEnd(JobState state_, std::optional<double> at_ = std::nullopt,
         std::optional<int> own_status_ = std::nullopt, std::string note_ = "")
      : state(state_), at(at_), own_status(own_status_), note(std::move(note_)) {}

  JobState state;                 // a final state
  std::optional<double> at;       // unix seconds; unset: the job's own ended_at, else now
  std::optional<int> own_status;  // a failed job's exit status (unset: 1); else unused
  std::string note;               // added to the job's note; "" adds nothing
};

// Ends a job in `end.state` (not a final state: waiting...running is move_job's, and this throws
// std::logic_error): its state, end time and exit code, and the note added.
void end_job(JobRecord& job, const JobEnd& end);

// Adds `line` to the job's note ("; " between lines), unless the note already holds it.
void add_note(JobRecord& job, const std::string& line);

}  // namespace nodus
