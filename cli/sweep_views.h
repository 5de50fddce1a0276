#pragma once
// How sweeps look: the comparison table of one sweep (end of `nodus sweep`, `nodus show SWEEP`)
// and the list of sweeps (`nodus sweeps`).

#include <string>

#include "core/table.h"
#include "store/store.h"

namespace nodus::cli {

// Prints the sweep's comparison table (stdout) and, for table/md, the summary sentence.
void print_sweep(store::Store& store, const store::SweepRecord& sweep, const std::string& sort,
                 Format format);

// "s12" or "s12 (name)".
std::string sweep_label(const store::SweepRecord& sweep);

}  // namespace nodus::cli
