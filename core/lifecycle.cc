#include "core/lifecycle.h"

#include <stdexcept>

#include "core/secret.h"

namespace nodus {

bool move_job(JobRecord& job, JobState to) {
  if (is_final(job.state) || is_final(to)) return false;
  job.state = to;
  return true;
}

void end_job(JobRecord& job, const JobEnd& end) {
  if (!is_final(end.state))
    throw std::logic_error("end_job: " + std::string(to_string(end.state)) + " is not an end");
  job.state = end.state;
  if (end.at)
    job.ended_at = *end.at;
  else if (!job.ended_at)
    job.ended_at = unix_now();
  job.exit_code = end.own_status;  // read by exit_status_for for a failed job only
  job.exit_code = exit_status_for(job);
  if (!end.note.empty()) add_note(job, end.note);
}

void add_note(JobRecord& job, const std::string& text) {
  // A note is stored and shown; an error in it may quote what the user typed (a command not
  // found that was a URL with its password).
  std::string line = redact_text(text);
  if (line.empty() || job.note.find(line) != std::string::npos) return;
  job.note = job.note.empty() ? line : job.note + "; " + line;
}

}  // namespace nodus
