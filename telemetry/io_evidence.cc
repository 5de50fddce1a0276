#include "telemetry/io_evidence.h"

#include <fstream>
#include <sstream>
#include <string>

#include "core/job.h"

namespace nodus::telemetry {
namespace {

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::optional<double> IoEvidence::read_mib_per_s() const {
  if (!readable || seconds <= 0) return std::nullopt;
  return static_cast<double>(read_bytes) / (1024.0 * 1024.0) / seconds;
}

std::optional<uint64_t> parse_read_bytes(std::string_view text) {
  constexpr std::string_view key = "\nread_bytes:";
  std::string padded = "\n" + std::string(text);
  auto at = padded.find(key);
  if (at == std::string::npos) return std::nullopt;
  try {
    return std::stoull(padded.substr(at + key.size()));
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<std::pair<uint64_t, uint64_t>> parse_cpu_iowait(std::string_view text) {
  if (text.rfind("cpu ", 0) != 0) return std::nullopt;
  std::istringstream in(std::string(text.substr(4, text.find('\n'))));
  uint64_t v = 0, total = 0, iowait = 0;
  int i = 0;
  while (in >> v) {
    if (i < 8) total += v;  // user nice system idle iowait irq softirq steal (guest is in user)
    if (i == 4) iowait = v;
    ++i;
  }
  if (i < 5) return std::nullopt;
  return std::make_pair(iowait, total);
}

IoTracker::IoTracker(pid_t main_pid, std::unique_ptr<ProcReader> reader)
    : reader_(std::move(reader)), walker_(main_pid, *reader_) {}

void IoTracker::sample() {
  for (const auto& p : walker_.members()) {
    auto text = slurp("/proc/" + std::to_string(p.pid) + "/io");
    if (!text) continue;
    auto bytes = parse_read_bytes(*text);
    if (!bytes) continue;
    readable_ = true;
    auto key = std::make_pair(p.pid, p.starttime);
    auto it = bytes_.find(key);
    if (it == bytes_.end())
      bytes_[key] = {first_sample_ ? *bytes : 0, *bytes};
    else
      it->second.second = *bytes;
  }
  if (auto stat = slurp("/proc/stat")) {
    if (auto cpu = parse_cpu_iowait(*stat)) {
      if (!cpu_first_) cpu_first_ = cpu;
      cpu_last_ = cpu;
    }
  }
  double now = unix_now();
  if (first_sample_) first_t_ = now;
  last_t_ = now;
  first_sample_ = false;
}

void IoTracker::rebase() {
  for (auto& [key, v] : bytes_) v.first = v.second;
  cpu_first_ = cpu_last_;
  first_t_ = last_t_;
}

IoEvidence IoTracker::evidence() const {
  IoEvidence e;
  e.readable = readable_;
  e.seconds = last_t_ - first_t_;
  for (const auto& [key, v] : bytes_)
    if (v.second > v.first) e.read_bytes += v.second - v.first;
  if (cpu_first_ && cpu_last_ && cpu_last_->second > cpu_first_->second)
    e.iowait_share = static_cast<double>(cpu_last_->first - cpu_first_->first) /
                     static_cast<double>(cpu_last_->second - cpu_first_->second);
  return e;
}

}  // namespace nodus::telemetry
