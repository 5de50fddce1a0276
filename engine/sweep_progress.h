#pragma once
// What a running sweep shows on stderr: on a terminal, a head line (elapsed, money spent against
// the budget, an ETA), a line per cell (state, elapsed, cost so far), redrawn in place and never
// taller than the terminal: when the cells do not fit, finished cells fold into one summary line
// and pending ones into a count, so the view stays one screen (no copies in the scrollback).
// Otherwise plain log lines, one per change. Colors only on a terminal without NO_COLOR.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"

namespace nodus::engine {

struct PlannedCell;

class SweepProgress {
 public:
  SweepProgress(std::string sweep_label, bool live, bool color);
  virtual ~SweepProgress() = default;

  void begin(const std::vector<PlannedCell>& cells, std::optional<double> budget);
  void cell_started(const PlannedCell& cell, const JobRecord& job);
  void cell_ended(const PlannedCell& cell, const JobRecord& job);
  void cell_skipped(const PlannedCell& cell, const std::string& why);
  void note(const std::string& text);  // "nodus: s3 TEXT" on stderr (not in the live view)
  void tick(const std::vector<PlannedCell>& cells, double spent);  // redraw (live only)
  void end();

  bool live() const { return live_; }

  // The live view's lines for a terminal of `height` rows and `width` columns at time `now`
  // (at most height - 1 lines, none wider than width, so the cursor stays on screen).
  std::vector<std::string> frame(int height, int width, double now) const;

 private:
  struct Row {
    std::string label;
    std::string state = "pending";
    std::optional<double> started_at;
    std::optional<double> ended_at;
    double cost = 0;
    double rate = 0;  // USD per second while running
    int64_t job_id = 0;
  };
  void redraw();
  std::string paint(const std::string& text, const char* color) const;

  std::string sweep_label_;
  bool live_;
  bool color_;
  std::vector<Row> rows_;
  std::map<int, size_t> row_of_;  // PlannedCell::index -> position in rows_
  double began_at_ = 0;
  Row& row(const PlannedCell& cell);
  std::optional<double> budget_;
  double spent_ = 0;
  std::optional<double> ended_at_;  // set by end(): the final frame, no ETA
  int drawn_lines_ = 0;
  int total_ = 0;
};

}  // namespace nodus::engine
