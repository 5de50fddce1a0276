#pragma once
// What a running sweep shows on stderr: on a terminal, a line per cell (state, elapsed, cost so
// far) and the total against the budget, redrawn in place; otherwise plain log lines, one per
// change. Colors only on a terminal without NO_COLOR.

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
  void tick(const std::vector<PlannedCell>& cells, double spent);  // redraw (live only)
  void end();

  bool live() const { return live_; }

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
  std::optional<double> budget_;
  double spent_ = 0;
  int drawn_lines_ = 0;
  int total_ = 0;
};

}  // namespace nodus::engine
