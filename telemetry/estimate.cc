#include "telemetry/estimate.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "telemetry/util_series.h"

namespace nodus::telemetry {
namespace {

bool valid_percent(double p) { return std::isfinite(p) && p > 0 && p <= 100; }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Result<Estimate> estimate(const EstimateInput& in) {
  if (in.gpus < 1)
    return Error::permanent("--gpu: invalid count " + std::to_string(in.gpus) +
                            ": expected 1 or more");
  if (!std::isfinite(in.rate) || in.rate < 0)
    return Error::permanent("rate: invalid value " + number(in.rate) +
                            ": expected USD per GPU-hour >= 0");
  if (!std::isfinite(in.hours) || in.hours <= 0)
    return Error::permanent("--hours: invalid value " + number(in.hours) + ": expected > 0");
  if (!valid_percent(in.util_pct))
    return Error::permanent("--util: invalid value " + number(in.util_pct) +
                            ": expected a percentage in (0, 100]");
  Estimate e;
  const double per_hour = in.gpus * in.rate;
  const double base_cost = per_hour * in.hours;
  e.busy_hours = in.hours * in.util_pct / 100.0;
  auto row = [&](double util) {
    EstimateRow r;
    r.util_pct = util;
    r.wall_hours = e.busy_hours / (util / 100.0);
    r.cost = per_hour * r.wall_hours;
    r.idle_usd = r.cost * (1.0 - util / 100.0);
    r.saved = base_cost - r.cost;
    return r;
  };
  e.rows.push_back(row(in.util_pct));
  e.rows.front().wall_hours = in.hours;  // exactly as given, not busy / util
  e.rows.front().cost = base_cost;
  e.rows.front().idle_usd = base_cost * (1.0 - in.util_pct / 100.0);
  e.rows.front().saved = 0;
  for (double target : in.targets) {
    if (!valid_percent(target))
      return Error::permanent("target utilization: invalid value " + number(target) +
                              ": expected a percentage in (0, 100]");
    if (target > in.util_pct) e.rows.push_back(row(target));
  }
  return e;
}

std::string format_hours(double hours) {
  // Under an hour "0.1 h" says little and "0 h" is wrong: minutes and seconds instead.
  if (hours < 1) return format_duration(Millis(std::llround(hours * 3600'000)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", hours);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s + " h";
}

Table estimate_table(const Estimate& e) {
  Table t({{"util", "UTIL", true},
           {"wall_hours", "WALL", true},
           {"cost_usd", "COST", true},
           {"idle_usd", "IDLE $", true},
           {"saved_usd", "SAVED", true}});
  for (size_t i = 0; i < e.rows.size(); ++i) {
    const auto& r = e.rows[i];
    t.add_row({format_percent(r.util_pct), format_hours(r.wall_hours), format_usd(r.cost),
               format_usd(r.idle_usd), i == 0 ? "-" : format_usd(r.saved)},
              // util: a fraction 0-1 in json and csv (docs/output.md).
              {{"util", r.util_pct / 100.0},
               {"wall_hours", r.wall_hours},
               {"cost_usd", r.cost},
               {"idle_usd", r.idle_usd},
               {"saved_usd", r.saved}});
  }
  return t;
}

}  // namespace nodus::telemetry
