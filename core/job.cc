#include "core/job.h"

#include <signal.h>

#include <array>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/parse.h"

namespace nodus {
namespace {
constexpr std::array<std::pair<JobState, std::string_view>, 13> kNames = {{
    {JobState::kWaiting, "waiting"},
    {JobState::kStarting, "starting"},
    {JobState::kRunning, "running"},
    {JobState::kCompleted, "completed"},
    {JobState::kFailed, "failed"},
    {JobState::kTimeout, "timeout"},
    {JobState::kCostCap, "cost-cap"},
    {JobState::kBudget, "budget"},
    {JobState::kLowUtil, "low-util"},
    {JobState::kTampered, "tampered"},
    {JobState::kStopped, "stopped"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kLost, "lost"},
}};
}  // namespace

std::string_view to_string(JobState s) {
  for (const auto& [state, name] : kNames)
    if (state == s) return name;
  return "unknown";
}

std::optional<JobState> job_state_from_string(std::string_view s) {
  for (const auto& [state, name] : kNames)
    if (name == s) return state;
  return std::nullopt;
}

bool is_final(JobState s) {
  return s != JobState::kWaiting && s != JobState::kStarting && s != JobState::kRunning;
}

bool is_failure(JobState s) {
  return s == JobState::kFailed || s == JobState::kLost || s == JobState::kTampered;
}

double JobRecord::gpu_seconds() const {
  if (!started_at) return 0;
  double end = ended_at ? *ended_at : unix_now();
  return gpu_count * std::max(0.0, end - *started_at);
}

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

int exit_status_for(const JobRecord& job) {
  switch (job.state) {
    case JobState::kCompleted:
      return 0;
    case JobState::kTimeout:
      return exit_code::kTimeout;
    case JobState::kCostCap:
    case JobState::kBudget:
      return exit_code::kCostCap;
    case JobState::kLowUtil:
      return exit_code::kLowUtilization;
    case JobState::kTampered:
      return exit_code::kTampered;
    case JobState::kCancelled:
      return exit_code::kInterrupted;
    case JobState::kStopped:
      return 128 + SIGTERM;
    case JobState::kFailed:
      return job.exit_code.value_or(1);
    default:
      return exit_code::kNodusError;
  }
}

std::optional<double> budget_cap_of(const nlohmann::json& options) {
  if (!options.is_object()) return std::nullopt;
  auto it = options.find("budget_cap");
  if (it == options.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

int nodes_of(const nlohmann::json& options) {
  if (!options.is_object()) return 1;
  auto it = options.find("nodes");
  if (it == options.end() || !it->is_number_integer() || it->get<int64_t>() < 1) return 1;
  return static_cast<int>(it->get<int64_t>());
}

std::optional<double> read_sentinel_end(const std::string& log_path) {
  if (log_path.empty()) return std::nullopt;
  std::ifstream in(end_time_path(log_path));
  double t = 0;
  if (!(in >> t) || !std::isfinite(t) || t <= 0) return std::nullopt;
  return t;
}

}  // namespace nodus
