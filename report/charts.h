#pragma once
// The SVG charts of a report, as strings to embed in the page. Labels are escaped here; the
// classes and data- attributes are the contract stated in report.h.

#include <string>
#include <vector>

#include "report/report.h"

namespace nodus::report {

struct Bar {
  std::string label;       // the cell's label
  double value = 0;        // >= 0
  std::string value_text;  // as shown at the end of the bar: "8,400", "$0.41"
  bool best = false;
};

struct BarChart {
  std::string id;          // data-chart: "throughput", "cost", "usd-per-million"
  std::string title;       // accessible name: "Throughput per cell"
  std::string axis_title;  // with the unit: "samples/s (higher is better)"
  bool money = false;      // ticks read "$0.50"
  std::vector<Bar> bars;   // top to bottom
};

// Horizontal bars, one row per bar, on a shared axis from 0 with round ticks. The best bar is dark
// and tagged "best" in text, so it stands out in grayscale too.
std::string render_bar_chart(const BarChart& chart);

// GPU utilization of one cell over its run: every sample as a light line (thinned to
// kMaxUtilPoints), a rolling average over a 16th of the run as a dark line (class "util-mean",
// drawn once there are 48 samples or more), the idle threshold, idle stretches hatched. The time
// axis ends where the run ended. cell.util must not be empty.
std::string render_util_chart(size_t cell_index, const Cell& cell);

// One profiled step (report.h's StepTimeline): CPU row, GPU row, idle gaps, syncs.
std::string render_step_timeline(size_t cell_index, const StepTimeline& timeline);

}  // namespace nodus::report
