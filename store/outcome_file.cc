#include "store/outcome_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json_input.h"

namespace nodus::store {
namespace {

constexpr size_t kReserved = 4096;
constexpr size_t kNoteMax = 2048;  // the rest of the note is in the store's row already

}  // namespace

int reserve_outcome_file(const std::string& log_path) {
  if (log_path.empty()) return -1;
  auto fd = create_new_file(outcome_path(log_path), 0600);
  if (!fd.ok()) return -1;
  if (::posix_fallocate(*fd, 0, kReserved) != 0) {
    ::close(*fd);
    ::unlink(outcome_path(log_path).c_str());
    return -1;
  }
  return *fd;
}

bool write_outcome_file(int fd, const JobRecord& job) {
  if (fd < 0) return false;
  nlohmann::json j = {{"job", job.id},
                      {"state", std::string(to_string(job.state))},
                      {"ended_at", job.ended_at.value_or(unix_now())},
                      {"cost", job.cost}};
  if (job.exit_code) j["exit_code"] = *job.exit_code;
  if (job.signal) j["signal"] = *job.signal;
  std::string note =
      job.note.size() > kNoteMax ? job.note.substr(job.note.size() - kNoteMax) : job.note;
  j["note"] = note;
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() + 1 > kReserved) return false;
  text += '\n';
  text.resize(kReserved, ' ');  // over the allocated blocks only: no new space is needed
  if (::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return false;
  return ::fdatasync(fd) == 0;
}

std::optional<KeptOutcome> read_outcome_file(const std::string& log_path, int64_t job_id) {
  if (log_path.empty()) return std::nullopt;
  auto fd = open_job_file(outcome_path(log_path));
  if (!fd.ok() || *fd < 0) return std::nullopt;
  std::string text(kReserved, '\0');
  ssize_t n = ::pread(*fd, text.data(), text.size(), 0);
  ::close(*fd);
  if (n <= 0) return std::nullopt;
  text.resize(static_cast<size_t>(n));
  // The file is the job's to replace (it runs as this user): read as untrusted, checked for
  // this job, and its end is clamped by the caller to what the store saw.
  while (!text.empty() && text.back() == ' ') text.pop_back();
  nlohmann::json j = parse_untrusted_json(text);
  if (!j.is_object() || !j["job"].is_number_integer() || j["job"].get<int64_t>() != job_id ||
      !j["state"].is_string() || !j["ended_at"].is_number())
    return std::nullopt;
  auto state = job_state_from_string(j["state"].get<std::string>());
  const double ended = j["ended_at"].get<double>();
  if (!state || !is_final(*state) || !std::isfinite(ended)) return std::nullopt;
  KeptOutcome k;
  k.state = *state;
  k.ended_at = ended;
  if (j["exit_code"].is_number_integer()) k.exit_code = j["exit_code"].get<int>();
  if (j["signal"].is_number_integer()) k.signal = j["signal"].get<int>();
  if (j["note"].is_string()) k.note = j["note"].get<std::string>();
  return k;
}

}  // namespace nodus::store
