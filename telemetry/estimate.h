#pragma once
// `nodus estimate`: what idle GPU time costs, and what the same work would cost at a higher
// utilization. The model (docs/facts.md): cost = gpus x rate x hours whatever the utilization; idle
// dollars = cost x (1 - util); holding busy time fixed (busy = hours x util), the same work at
// utilization u takes busy / u hours. A model, not a benchmark.

#include <vector>

#include "core/result.h"
#include "core/table.h"

namespace nodus::telemetry {

struct EstimateInput {
  int gpus = 1;
  double rate = 0;                             // USD per GPU-hour
  double hours = 0;                            // wall time at the current utilization
  double util_pct = 0;                         // current utilization, (0, 100]
  std::vector<double> targets = {60, 80, 95};  // percent; those not above util_pct are skipped
};

struct EstimateRow {
  double util_pct = 0;
  double wall_hours = 0;
  double cost = 0;      // USD
  double idle_usd = 0;  // cost x (1 - util)
  double saved = 0;     // the current cost minus this one
};

struct Estimate {
  double busy_hours = 0;
  std::vector<EstimateRow> rows;  // rows[0]: the current utilization, then the targets
};

// Errors name the bad value: gpus < 1, rate < 0, hours <= 0, util or a target outside (0, 100].
Result<Estimate> estimate(const EstimateInput& in);

// Columns UTIL, WALL, COST, IDLE $, SAVED; raw rows {util (0-1), wall_hours, cost_usd, idle_usd,
// saved_usd}.
Table estimate_table(const Estimate& e);

// "24 h", "10.1 h": hours with at most one decimal; under an hour "15m00s", "6.0s".
std::string format_hours(double hours);

}  // namespace nodus::telemetry
