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
  if (seconds <= 0) return std::nullopt;
  if (cgroup_read_bytes)
    return static_cast<double>(*cgroup_read_bytes) / (1024.0 * 1024.0) / seconds;
  if (!readable) return std::nullopt;
  return static_cast<double>(read_bytes) / (1024.0 * 1024.0) / seconds;
}

std::string IoEvidence::source() const {
  return cgroup_read_bytes ? "cgroup io.stat" : "/proc/PID/io";
}

std::optional<uint64_t> parse_io_stat_rbytes(std::string_view text) {
  std::optional<uint64_t> sum;
  constexpr std::string_view key = "rbytes=";
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    // Only a whole word: "rbytes=" at a line start or after a space.
    if (at > 0 && text[at - 1] != ' ' && text[at - 1] != '\n') {
      at += key.size();
      continue;
    }
    at += key.size();
    uint64_t v = 0;
    size_t n = 0;
    while (at + n < text.size() && text[at + n] >= '0' && text[at + n] <= '9')
      v = v * 10 + static_cast<uint64_t>(text[at + n] - '0'), ++n;
    if (n > 0) sum = sum.value_or(0) + v;
  }
  return sum;
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

IoTracker::IoTracker(pid_t main_pid, std::unique_ptr<ProcReader> reader, const std::string& cgroup)
    : reader_(std::move(reader)), walker_(main_pid, *reader_, cgroup) {}

void IoTracker::watch_cgroup(std::string dir) { cgroup_dir_ = std::move(dir); }

void IoTracker::sample() {
  if (!cgroup_dir_.empty()) {
    // The cgroup disappears with the job: a failed read later keeps the last value.
    if (auto text = slurp(cgroup_dir_ + "/io.stat")) {
      auto bytes = parse_io_stat_rbytes(*text);
      if (!bytes && text->empty()) bytes = 0;  // no device read from yet
      if (bytes) {
        if (!cg_first_) cg_first_ = first_sample_ ? *bytes : 0;
        cg_last_ = bytes;
      }
    }
    cg_tried_ = true;
  }
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
  if (cg_last_) cg_first_ = cg_last_;
  cpu_first_ = cpu_last_;
  first_t_ = last_t_;
}

IoEvidence IoTracker::evidence() const {
  IoEvidence e;
  e.readable = readable_;
  e.seconds = last_t_ - first_t_;
  for (const auto& [key, v] : bytes_)
    if (v.second > v.first) e.read_bytes += v.second - v.first;
  if (cg_first_ && cg_last_)
    e.cgroup_read_bytes = *cg_last_ > *cg_first_ ? *cg_last_ - *cg_first_ : 0;
  else if (cgroup_dir_.empty())
    e.cgroup_note = "no cgroup for the job";
  else if (cg_tried_)
    e.cgroup_note = "no io.stat in the job's cgroup (io controller not enabled there)";
  if (cpu_first_ && cpu_last_ && cpu_last_->second > cpu_first_->second)
    e.iowait_share = static_cast<double>(cpu_last_->first - cpu_first_->first) /
                     static_cast<double>(cpu_last_->second - cpu_first_->second);
  return e;
}

}  // namespace nodus::telemetry
