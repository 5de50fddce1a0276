#pragma once
// Report data for the tests: a realistic num_workers sweep on one H200 (the shape of the measured
// ground truth in the project's context notes: throughput and data wait per worker count), and
// the same sweep with hostile text in every user-supplied field.

#include <string>
#include <vector>

#include "report/report.h"

namespace nodus::report::testing {

// Five cells: num_workers = 0, 2, 4, 8, 14; 1 Hz utilization samples (num_workers=0 runs long
// enough to be thinned); num_workers=14 is the best cell.
ReportData demo_sweep();

// Strings that would inject markup or script if a renderer forgot to escape them.
const std::vector<std::string>& hostile_strings();

// demo_sweep() with hostile_strings() in the title, command, grid, params, labels, unit,
// verdicts, diagnosis, GPU type, backend and summary.
ReportData hostile_sweep();

}  // namespace nodus::report::testing
