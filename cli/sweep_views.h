#pragma once
// How sweeps look: the comparison table of one sweep (end of `nodus sweep`, `nodus show SWEEP`)
// and the list of sweeps (`nodus sweeps`).

#include <string>
#include <vector>

#include "core/table.h"
#include "engine/sweep_session.h"
#include "store/store.h"

namespace nodus::cli {

// How to show a sweep: --sort, --objective (empty: the one the sweep was started with, else
// throughput:max) and --columns (comma lists; empty: every column).
struct SweepView {
  std::string sort;
  std::string objective;
  std::vector<std::string> columns;
};

// Prints the sweep's comparison table (stdout) and, for table/md, the summary sentence.
void print_sweep(store::Store& store, const store::SweepRecord& sweep, const SweepView& view,
                 Format format);

// The objective a sweep's table ranks by: `flag` when given, else the sweep's own.
std::string sweep_objective(const store::SweepRecord& sweep, const std::string& flag);

// "s12" or "s12 (name)".
using engine::sweep_label;  // "s12 (name)" (engine/sweep_session.h)

}  // namespace nodus::cli
