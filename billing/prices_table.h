#pragma once
// The catalog as a Table, for `nodus prices`: one row per GPU type with its rate and provenance.

#include "billing/catalog.h"
#include "core/table.h"

namespace nodus::billing {

// Columns TYPE, ALIASES, $/GPU-HOUR, SOURCE, CHECKED (and ORIGIN when a user catalog is merged
// over the built-in one); json/csv keys in docs/output.md. Rows in catalog order.
Table prices_table(const Catalog& catalog);

// A rate as the catalog states it, to the hundredth of a cent: "$2.60", "$4.5396", "$0.7992".
std::string format_rate(double usd_per_gpu_hour);

}  // namespace nodus::billing
