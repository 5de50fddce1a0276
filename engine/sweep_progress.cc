#include "engine/sweep_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/cost.h"
#include "core/parse.h"
#include "core/secret.h"
#include "engine/planned_cell.h"

namespace nodus::engine {
namespace {

// A cell the sweep ended before it started (stopped, interrupted, out of budget).
constexpr const char* kNotRun = "not run";

// The terminal's size (rows, columns); 24 x 80 when it cannot be asked.
std::pair<int, int> terminal_size() {
  winsize ws{};
  if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
    return {ws.ws_row, ws.ws_col};
  return {24, 80};
}

std::string duration(double seconds) {
  return format_duration(Millis(static_cast<long long>(std::max(0.0, seconds) * 1000)));
}

// Cuts a line to `width` visible columns (escape sequences take none).
std::string fit(const std::string& line, int width) {
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      size_t m = line.find('m', i);
      if (m == std::string::npos) break;
      out += line.substr(i, m - i + 1);
      i = m;
      continue;
    }
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) {
      if (shown == width) break;
      ++shown;
    }
    out += line[i];
  }
  return out;
}

}  // namespace

SweepProgress::SweepProgress(std::string sweep_label, bool live, bool color)
    : sweep_label_(std::move(sweep_label)), live_(live), color_(color) {}

std::string SweepProgress::paint(const std::string& text, const char* color) const {
  return color_ ? std::string("\x1b[") + color + "m" + text + "\x1b[0m" : text;
}

void SweepProgress::begin(const std::vector<PlannedCell>& cells, std::optional<double> budget) {
  budget_ = budget;
  total_ = static_cast<int>(cells.size());
  began_at_ = unix_now();
  rows_.clear();
  row_of_.clear();
  for (const auto& c : cells) {
    row_of_[c.index] = rows_.size();
    Row r;
    r.label = c.label;
    if (c.done) r.state = "done before";
    rows_.push_back(r);
  }
  if (live_) redraw();
}

SweepProgress::Row& SweepProgress::row(const PlannedCell& cell) {
  return rows_.at(row_of_.at(cell.index));
}

void SweepProgress::cell_started(const PlannedCell& cell, const JobRecord& job) {
  Row& r = row(cell);
  r.state = "running";
  r.started_at = unix_now();
  r.rate = usd_per_second(job.gpu_count, job.rate_per_gpu_hour);
  r.job_id = job.id;
  if (live_) return redraw();
  std::string gpus;
  for (int g : job.gpu_indices) gpus += (gpus.empty() ? " on GPU " : ",") + std::to_string(g);
  std::fprintf(stderr, "nodus: %s cell %d/%d [%s] started: job %lld%s\n", sweep_label_.c_str(),
               static_cast<int>(row_of_.at(cell.index)) + 1, total_, cell.label.c_str(),
               static_cast<long long>(job.id), gpus.c_str());
}

void SweepProgress::cell_ended(const PlannedCell& cell, const JobRecord& job) {
  Row& r = row(cell);
  r.state = cell.stopped_early ? "stopped-early" : std::string(to_string(job.state));
  r.ended_at = unix_now();
  r.cost = job.cost;
  spent_ += job.cost;
  if (live_) return redraw();
  double wall = job.started_at && job.ended_at ? *job.ended_at - *job.started_at : 0;
  // A cell --stop-early stopped says why, in the sweep's events (its note).
  std::string why = cell.stopped_early && !job.note.empty() ? " (" + job.note + ")" : "";
  std::fprintf(stderr, "nodus: %s cell %d/%d [%s] %s in %s, %s%s\n", sweep_label_.c_str(),
               static_cast<int>(row_of_.at(cell.index)) + 1, total_, cell.label.c_str(),
               r.state.c_str(),
               format_duration(Millis(static_cast<long long>(wall * 1000))).c_str(),
               format_usd(job.cost).c_str(), why.c_str());
}

void SweepProgress::cell_skipped(const PlannedCell& cell, const std::string& why) {
  row(cell).state = "skipped";
  if (live_) return redraw();
  std::fprintf(stderr, "nodus: %s cell %d/%d [%s] skipped: %s\n", sweep_label_.c_str(),
               static_cast<int>(row_of_.at(cell.index)) + 1, total_, cell.label.c_str(),
               redact_text(why).c_str());
}

void SweepProgress::note(const std::string& text) {
  if (live_) return;
  std::fprintf(stderr, "nodus: %s %s\n", sweep_label_.c_str(), redact_text(text).c_str());
}

void SweepProgress::tick(const std::vector<PlannedCell>&, double spent) {
  spent_ = spent;
  if (live_) redraw();
}

std::vector<std::string> SweepProgress::frame(int height, int width, double now) const {
  double running_cost = 0, finished_wall = 0;
  int running = 0, finished = 0, pending = 0, not_run = 0, ok = 0, timed = 0;
  std::map<std::string, int> by_state;
  if (ended_at_) now = std::min(now, *ended_at_);  // the last frame stays the last moment
  for (const Row& r : rows_) {
    double elapsed = r.started_at ? r.ended_at.value_or(now) - *r.started_at : 0;
    if (r.state == "running") {
      running++;
      running_cost += r.rate * elapsed;
    } else if (r.state == "pending") {
      pending++;
    } else if (r.state == kNotRun) {
      not_run++;
    } else {
      finished++;
      by_state[r.state]++;
      if (r.started_at && r.ended_at) finished_wall += elapsed, ++timed;
      ok += r.state == "completed" || r.state == "done before";
    }
  }
  // ETA: cells still to run at the mean duration of the finished ones, as many at once as run
  // now; unknown until a cell has finished.
  std::string eta = "ETA -";
  if (timed > 0 && (running + pending) > 0) {
    double mean = finished_wall / timed;
    double left = pending * mean;
    for (const Row& r : rows_)
      if (r.state == "running" && r.started_at) left += std::max(0.0, mean - (now - *r.started_at));
    eta = "ETA ~" + duration(left / std::max(1, running));
  } else if (running + pending == 0) {
    eta = "done";
  }
  // The sweep ended (all run, stopped or interrupted): nothing is left to estimate.
  if (ended_at_) eta = "ended";
  std::string budget = budget_ ? " of " + format_usd(*budget_) + " budget" : "";
  std::vector<std::string> lines;
  lines.push_back(
      sweep_label_ + ": " + std::to_string(total_) + " cells, " + std::to_string(running) +
      " running, " + std::to_string(finished) + " finished, " +
      (not_run > 0 ? std::to_string(not_run) + " not run" : std::to_string(pending) + " pending") +
      "; " + duration(now - began_at_) + " elapsed, " + eta + ", " +
      format_usd(spent_ + running_cost) + " spent" + budget);

  auto cell_line = [&](size_t i) {
    const Row& r = rows_[i];
    double elapsed = r.started_at ? r.ended_at.value_or(now) - *r.started_at : 0;
    double cost = r.ended_at ? r.cost : r.rate * elapsed;
    const char* color = r.state == "running"     ? "36"
                        : r.state == "completed" ? "32"
                        : r.state == "pending" || r.state == "done before" || r.state == kNotRun
                            ? "2"
                            : "31";
    char line[512];
    std::snprintf(line, sizeof line, "  %3zu  %-34.34s %s %9s %10s", i + 1, r.label.c_str(),
                  paint(std::string(r.state) +
                            std::string(r.state.size() < 11 ? 11 - r.state.size() : 0, ' '),
                        color)
                      .c_str(),
                  r.started_at ? duration(elapsed).c_str() : "-",
                  r.started_at ? format_usd(cost).c_str() : "-");
    return std::string(line);
  };
  // Room for cell lines: the terminal less the head line and the line the cursor rests on.
  const int room = std::max(1, height - 2);
  if (static_cast<int>(rows_.size()) <= room) {
    for (size_t i = 0; i < rows_.size(); ++i) lines.push_back(cell_line(i));
  } else {
    // Folded: one line for the finished cells, then the running ones, then pending ones as
    // fit, the rest counted.
    std::string summary = "  " + std::to_string(finished) + " finished";
    if (finished > 0) {
      summary += ":";
      for (const auto& [state, n] : by_state) summary += " " + std::to_string(n) + " " + state;
    }
    lines.push_back(summary);
    int left = room - 1;
    std::vector<size_t> shown_pending;
    for (size_t i = 0; i < rows_.size(); ++i) {
      if (rows_[i].state != "running") continue;
      if (left <= 1 && pending > 0) break;  // keep a line for the pending count
      if (left <= 0) break;
      lines.push_back(cell_line(i));
      --left;
    }
    int hidden_running = running - static_cast<int>(lines.size() - 2);
    if (pending > 0 || hidden_running > 0) {
      std::string rest = "  ";
      if (hidden_running > 0) rest += std::to_string(hidden_running) + " more running, ";
      rest += std::to_string(pending) + " pending";
      if (left >= 1) lines.push_back(rest);
    }
    if (not_run > 0 && left >= 1) lines.push_back("  " + std::to_string(not_run) + " not run");
  }
  for (auto& l : lines) l = fit(l, std::max(1, width - 1));
  if (static_cast<int>(lines.size()) > std::max(1, height - 1))
    lines.resize(static_cast<size_t>(std::max(1, height - 1)));
  return lines;
}

void SweepProgress::redraw() {
  auto [height, width] = terminal_size();
  std::string out;
  if (drawn_lines_ > 0) out += "\x1b[" + std::to_string(drawn_lines_) + "A\r\x1b[J";
  auto lines = frame(height, width, unix_now());
  for (const auto& l : lines) out += l + "\n";
  drawn_lines_ = static_cast<int>(lines.size());
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
}

void SweepProgress::end() {
  // Cells that never started will not now: the final frame says so instead of an ETA for them.
  ended_at_ = unix_now();
  for (Row& r : rows_)
    if (r.state == "pending") r.state = kNotRun;
  if (live_) redraw();
  drawn_lines_ = 0;
}

}  // namespace nodus::engine
