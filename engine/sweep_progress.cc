#include "engine/sweep_progress.h"

#include <cstdio>

#include "core/cost.h"
#include "core/parse.h"
#include "engine/sweep_runner.h"

namespace nodus::engine {
namespace {
constexpr int kMaxLiveRows = 40;  // past this, the live view shows running cells and counts
}

SweepProgress::SweepProgress(std::string sweep_label, bool live, bool color)
    : sweep_label_(std::move(sweep_label)), live_(live), color_(color) {}

std::string SweepProgress::paint(const std::string& text, const char* color) const {
  return color_ ? std::string("\x1b[") + color + "m" + text + "\x1b[0m" : text;
}

void SweepProgress::begin(const std::vector<PlannedCell>& cells, std::optional<double> budget) {
  budget_ = budget;
  total_ = static_cast<int>(cells.size());
  rows_.clear();
  for (const auto& c : cells) {
    Row r;
    r.label = c.label;
    if (c.done) r.state = "done before";
    rows_.push_back(r);
  }
  if (live_) redraw();
}

void SweepProgress::cell_started(const PlannedCell& cell, const JobRecord& job) {
  Row& r = rows_.at(cell.index);
  r.state = "running";
  r.started_at = unix_now();
  r.rate = usd_per_second(job.gpu_count, job.rate_per_gpu_hour);
  r.job_id = job.id;
  if (live_) return redraw();
  std::string gpus;
  for (int g : job.gpu_indices) gpus += (gpus.empty() ? " on GPU " : ",") + std::to_string(g);
  std::fprintf(stderr, "nodus: %s cell %d/%d [%s] started: job %lld%s\n", sweep_label_.c_str(),
               cell.index + 1, total_, cell.label.c_str(), static_cast<long long>(job.id),
               gpus.c_str());
}

void SweepProgress::cell_ended(const PlannedCell& cell, const JobRecord& job) {
  Row& r = rows_.at(cell.index);
  r.state = std::string(to_string(job.state));
  r.ended_at = unix_now();
  r.cost = job.cost;
  spent_ += job.cost;
  if (live_) return redraw();
  double wall = job.started_at && job.ended_at ? *job.ended_at - *job.started_at : 0;
  std::fprintf(stderr, "nodus: %s cell %d/%d [%s] %s in %s, %s\n", sweep_label_.c_str(),
               cell.index + 1, total_, cell.label.c_str(), r.state.c_str(),
               format_duration(Millis(static_cast<long long>(wall * 1000))).c_str(),
               format_usd(job.cost).c_str());
}

void SweepProgress::cell_skipped(const PlannedCell& cell, const std::string& why) {
  rows_.at(cell.index).state = "skipped";
  if (live_) return redraw();
  std::fprintf(stderr, "nodus: %s cell %d/%d [%s] skipped: %s\n", sweep_label_.c_str(),
               cell.index + 1, total_, cell.label.c_str(), why.c_str());
}

void SweepProgress::tick(const std::vector<PlannedCell>&, double spent) {
  spent_ = spent;
  if (live_) redraw();
}

void SweepProgress::redraw() {
  std::string out;
  if (drawn_lines_ > 0) out += "\x1b[" + std::to_string(drawn_lines_) + "A\x1b[J";
  double now = unix_now();
  double running_cost = 0;
  int running = 0, finished = 0;
  std::vector<std::string> lines;
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    double elapsed = r.started_at ? r.ended_at.value_or(now) - *r.started_at : 0;
    double cost = r.ended_at ? r.cost : r.rate * elapsed;
    if (r.state == "running") {
      running++;
      running_cost += cost;
    } else if (r.state != "pending") {
      finished++;
    }
    if (rows_.size() > kMaxLiveRows && r.state != "running") continue;
    const char* color = r.state == "running"                               ? "36"
                        : r.state == "completed"                           ? "32"
                        : r.state == "pending" || r.state == "done before" ? "2"
                                                                           : "31";
    char line[512];
    std::snprintf(line, sizeof line, "  %3zu  %-34.34s %s %9s %10s", i + 1, r.label.c_str(),
                  paint(std::string(r.state) +
                            std::string(r.state.size() < 11 ? 11 - r.state.size() : 0, ' '),
                        color)
                      .c_str(),
                  r.started_at
                      ? format_duration(Millis(static_cast<long long>(elapsed * 1000))).c_str()
                      : "-",
                  r.started_at ? format_usd(cost).c_str() : "-");
    lines.push_back(line);
  }
  char head[256];
  std::string budget = budget_ ? " of " + format_usd(*budget_) + " budget" : "";
  std::snprintf(head, sizeof head, "%s: %d cells, %d running, %d finished, %s spent%s",
                sweep_label_.c_str(), total_, running, finished,
                format_usd(spent_ + running_cost).c_str(), budget.c_str());
  out += std::string(head) + "\n";
  for (const auto& l : lines) out += l + "\n";
  drawn_lines_ = static_cast<int>(lines.size()) + 1;
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
}

void SweepProgress::end() {
  if (live_) redraw();
  drawn_lines_ = 0;
}

}  // namespace nodus::engine
