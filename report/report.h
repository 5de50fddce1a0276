#pragma once
// Reports of a sweep (or of one job) that people would rather look at than a terminal table:
// render_html gives one self-contained page with inline SVG charts, render_markdown a PNG-free
// summary to paste into a pull request or a chat.
//
// ReportData is plain data: the CLI fills it from the store, the renderers only read it. Every
// string in it may come from a user (command lines, parameter names and values, metric names,
// labels, verdicts) and is escaped by the renderers; callers pass raw text.
//
// The HTML contract, which tests and other tools may rely on:
//  - no network: no <script>, no <link>, no external url(); a Content-Security-Policy meta
//    forbids scripts (default-src 'none'; style-src 'unsafe-inline'; img-src data:);
//  - sweep reports have three bar charts, <svg class="chart" data-chart="D"> with D one of
//    throughput, cost, usd-per-million, each with one <rect class="bar"> per cell that has that
//    value (the best cell's bar also carries the class "best"); job reports (one cell) have no bar
//    charts;
//  - one <svg class="chart util-chart" data-cell="I"> per cell with utilization samples (I is the
//    cell's index in cells), holding one <polyline class="util">: one point per sample up to
//    kMaxUtilPoints, and a min/max envelope of at most kMaxUtilPoints points beyond that (long
//    runs also get a rolling average, <polyline class="util-mean">); idle stretches (util below
//    kIdleUtilPercent) are <rect class="idle">;
//  - one <svg class="chart step-timeline" data-cell="I"> per profiled cell: a CPU row and a GPU
//    row of <rect class="cpu"> / <rect class="gpu"> boxes, GPU-idle gaps as <rect class="gap">
//    (<rect class="gap fetch"> while the loop fetched its next batch), each host-device sync as
//    a <line class="sync">.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/idle.h"  // kIdleUtilPercent: a sample below it counts as idle

namespace nodus::report {

enum class ReportKind { kSweep, kJob };

inline constexpr size_t kMaxUtilPoints = 800;  // points per utilization line, at most

// One finding about a cell, in the shape of the symptom -> cause -> first fix table of
// docs/facts.md.
struct Diagnosis {
  std::string cause;     // "too few DataLoader workers"
  std::string fix;       // "raise num_workers; add pin_memory=True"
  std::string evidence;  // "data wait 83% of the loop's time"
};

// One profiled step (nodus run --profile), drawn as a timeline: times in ms from its start.
struct StepTimeline {
  double step_ms = 0;
  std::vector<std::pair<double, double>> cpu;         // the loop's thread busy
  std::vector<std::pair<double, double>> gpu;         // kernels and copies
  std::vector<std::pair<double, double>> fetch;       // waiting for the next batch
  std::vector<std::pair<double, std::string>> syncs;  // host-device syncs: when, what
  bool cuda = true;                                   // false: a CPU-only trace, no GPU row
  std::string caption;                                // "GPU busy 41% of the step, ..."
};

struct UtilPoint {
  double t = 0;     // seconds since the cell's job started
  double util = 0;  // percent, 0..100 (mean over the job's GPUs)
};

struct Cell {
  std::string label;                                        // "num_workers=8"
  std::vector<std::pair<std::string, std::string>> params;  // in grid order
  std::string status;                                       // "completed", "timeout", ...
  double wall_s = 0;
  double cost_usd = 0;
  std::optional<double> throughput;       // in ReportData::throughput_unit
  std::optional<double> usd_per_million;  // USD per million samples
  std::optional<double> data_wait;        // fraction 0..1 of loop time waiting for batches
  std::optional<double> util_mean;        // percent
  std::optional<double> idle_usd;         // cost x (1 - utilization)
  std::optional<double> mfu;              // model FLOPs utilization, 0..1 (engine/measure.h)
  // The hourly rate's share the MFU leaves unused: "$X/h of arithmetic paid for and unused".
  std::optional<double> unused_usd_per_hour;
  std::string verdict;  // one line: "data-starved", "best: fastest and cheapest"
  std::vector<Diagnosis> diagnosis;
  bool best = false;
  std::vector<UtilPoint> util;           // in time order
  std::optional<StepTimeline> timeline;  // with --profile
};

struct GridAxis {
  std::string name;
  std::vector<std::string> values;
};

struct Totals {
  double cost_usd = 0;
  double wall_s = 0;               // first start to last end
  std::optional<double> idle_usd;  // sum over cells that have it
};

struct ReportData {
  std::string title;  // "Sweep 12: num_workers"
  ReportKind kind = ReportKind::kSweep;
  std::vector<std::string> command;  // argv, with {NAME} placeholders as typed
  std::vector<GridAxis> grid;        // empty for a job
  std::string gpu_type;              // "H200"; "" for CPU-only
  int gpu_count = 1;                 // per cell
  double rate_per_gpu_hour = 0;      // USD
  double created_at = 0;             // unix seconds, shown as UTC
  std::string backend;               // "local", "slurm"
  std::string throughput_unit = "samples/s";
  std::vector<Cell> cells;
  std::string summary;  // one sentence: the answer of the sweep
  Totals totals;
};

// The whole page: <!DOCTYPE html> to </html>, UTF-8.
std::string render_html(const ReportData& data);

// A Markdown summary: title, summary sentence, command, grid and setup, the comparison table
// (GitHub table, best row in bold) and the diagnosis per cell. No images.
std::string render_markdown(const ReportData& data);

}  // namespace nodus::report
