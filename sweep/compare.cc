#include "sweep/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "core/parse.h"
#include "sweep/placeholders.h"

namespace nodus::sweep {
namespace {

bool comparable(const CellResult& c) {
  return c.state == "completed" && c.throughput && *c.throughput > 0 && c.wall_s > 0;
}

// Dollars per sample: the quantity the best cell minimizes (0 when the cell cost nothing).
double cost_per_sample(const CellResult& c) { return c.cost / (*c.throughput * c.wall_s); }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_throughput(double v) { return fixed(v, v >= 100 ? 0 : v >= 10 ? 1 : 2); }

// Two significant digits: 8.1, 12, 0.12, 0.05.
std::string format_ratio(double r) {
  if (r >= 10) return fixed(r, 0);
  if (r >= 1) return fixed(r, 1);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2g", r);
  return buf;
}

std::string or_dash(const std::optional<double>& v, std::string (*format)(double)) {
  return v ? format(*v) : "-";
}

nlohmann::json or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nullptr; }

std::string status_text(const CellResult& c) {
  if (c.state == "failed" && c.exit_code && *c.exit_code != 0)
    return c.state + " (exit " + std::to_string(*c.exit_code) + ")";
  return c.state;
}

// Orders raw JSON values for --sort: numbers, then strings, then empty values.
int rank(const nlohmann::json& v) { return v.is_number() ? 0 : v.is_string() ? 1 : 2; }

bool value_less(const nlohmann::json& a, const nlohmann::json& b, bool descending) {
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  if (a.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    return descending ? x > y : x < y;
  }
  if (a.is_string()) {
    const auto& x = a.get_ref<const std::string&>();
    const auto& y = b.get_ref<const std::string&>();
    return descending ? x > y : x < y;
  }
  return false;
}

struct Layout {
  std::vector<Column> columns;
  std::vector<std::string> param_keys;
};

Layout layout_for(const std::vector<CellResult>& cells) {
  static const std::set<std::string> kFixed = {"cell",      "params",     "status",
                                               "exit_code", "wall_s",     "gpu_seconds",
                                               "cost_usd",  "throughput", "usd_per_million_samples",
                                               "data_wait", "util_mean",  "idle_usd",
                                               "verdict",   "best",       "schema_version"};
  Layout l;
  l.columns.push_back({"cell", "CELL", true});
  if (!cells.empty()) {
    for (const auto& p : cells.front().params) {
      std::string key = kFixed.count(p.name) ? "param_" + p.name : p.name;
      l.param_keys.push_back(key);
      l.columns.push_back({key, p.name, false});
    }
  }
  l.columns.push_back({"status", "STATUS"});
  l.columns.push_back({"wall_s", "WALL", true});
  l.columns.push_back({"cost_usd", "COST", true});
  l.columns.push_back({"throughput", "THROUGHPUT", true});
  l.columns.push_back({"usd_per_million_samples", "$/M SAMPLES", true});
  l.columns.push_back({"data_wait", "DATA WAIT", true});
  // json and csv always carry these; the table shows them when some cell has a value.
  l.columns.push_back({"util_mean", "UTIL %", true, Show::kIfAny});
  l.columns.push_back({"idle_usd", "IDLE $", true, Show::kIfAny});
  l.columns.push_back({"verdict", "VERDICT", false, Show::kIfAny});
  l.columns.push_back({"gpu_seconds", "GPU-S", true, Show::kMachine});
  l.columns.push_back({"exit_code", "EXIT", true, Show::kMachine});
  l.columns.push_back({"params", "PARAMS", false, Show::kMachine});
  l.columns.push_back({"best", "BEST", false, Show::kMachine});
  return l;
}

}  // namespace

std::optional<double> usd_per_million_samples(const CellResult& c) {
  if (!c.throughput || *c.throughput <= 0 || c.wall_s <= 0) return std::nullopt;
  return c.cost / (*c.throughput * c.wall_s) * 1e6;
}

std::optional<size_t> best_cell(const std::vector<CellResult>& cells) {
  std::optional<size_t> best;
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i];
    if (!comparable(c)) continue;
    if (!best) {
      best = i;
      continue;
    }
    const auto& b = cells[*best];
    double cc = cost_per_sample(c), cb = cost_per_sample(b);
    if (cc < cb || (cc == cb && (*c.throughput > *b.throughput ||
                                 (*c.throughput == *b.throughput && c.index < b.index))))
      best = i;
  }
  return best;
}

std::string summary_sentence(const std::vector<CellResult>& cells) {
  auto best = best_cell(cells);
  if (!best) return "";
  std::optional<size_t> slow;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i == *best || !comparable(cells[i])) continue;
    const auto& c = cells[i];
    if (!slow || *c.throughput < *cells[*slow].throughput ||
        (*c.throughput == *cells[*slow].throughput && c.index < cells[*slow].index))
      slow = i;
  }
  if (!slow) return "";
  const CellResult& b = cells[*best];
  const CellResult& s = cells[*slow];

  std::vector<Param> bp, sp;
  for (size_t k = 0; k < b.params.size() && k < s.params.size(); ++k) {
    if (b.params[k].value == s.params[k].value) continue;
    bp.push_back(b.params[k]);
    sp.push_back(s.params[k]);
  }
  std::string b_label = bp.empty() ? "cell " + std::to_string(b.index) : cell_label(bp);
  std::string s_label = sp.empty() ? "cell " + std::to_string(s.index) : cell_label(sp);

  std::string out = b_label + ": " + format_ratio(*b.throughput / *s.throughput) +
                    "x the throughput of " + s_label;
  if (cost_per_sample(s) > 0)
    out += " at " + format_ratio(cost_per_sample(b) / cost_per_sample(s)) + "x the cost per sample";
  return out;
}

Result<Table> compare_table(const std::vector<CellResult>& cells, const CompareOptions& options) {
  Layout l = layout_for(cells);
  if (!options.sort.empty()) {
    bool known = false;
    std::string keys;
    for (const auto& col : l.columns) {
      if (col.key == "params") continue;  // an object: nothing to order by
      known |= col.key == options.sort;
      keys += (keys.empty() ? "" : ", ") + col.key;
    }
    if (!known)
      return Error::permanent("--sort: unknown column '" + options.sort + "': expected one of " +
                              keys);
  }
  auto best = best_cell(cells);

  std::vector<std::vector<std::string>> text;
  std::vector<nlohmann::json> raw;
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i];
    auto per_m = usd_per_million_samples(c);
    std::vector<std::string> t{std::to_string(c.index)};
    nlohmann::json j = {{"cell", c.index}, {"params", params_json(c.params)}};
    for (size_t k = 0; k < l.param_keys.size(); ++k) {
      const Param* p = k < c.params.size() ? &c.params[k] : nullptr;
      t.push_back(p ? p->value : "-");
      j[l.param_keys[k]] = p ? j["params"][p->name] : nlohmann::json();
    }
    t.push_back(status_text(c));
    t.push_back(format_duration(Millis(std::llround(c.wall_s * 1000))));
    t.push_back(format_usd(c.cost));
    t.push_back(or_dash(c.throughput, format_throughput));
    t.push_back(or_dash(per_m, format_usd));
    t.push_back(or_dash(c.data_wait, [](double v) { return fixed(v * 100, 0) + "%"; }));
    j["status"] = c.state;
    j["exit_code"] = c.exit_code ? nlohmann::json(*c.exit_code) : nullptr;
    j["wall_s"] = c.wall_s;
    j["gpu_seconds"] = c.gpu_seconds;
    j["cost_usd"] = c.cost;
    j["throughput"] = or_null(c.throughput);
    j["usd_per_million_samples"] = or_null(per_m);
    j["data_wait"] = or_null(c.data_wait);
    t.push_back(or_dash(c.util_mean, [](double v) { return fixed(v, 0); }));
    // Percent in the table, a fraction 0-1 in json and csv (docs/output.md).
    j["util_mean"] = c.util_mean ? nlohmann::json(*c.util_mean / 100.0) : nullptr;
    t.push_back(or_dash(c.idle_usd, format_usd));
    j["idle_usd"] = or_null(c.idle_usd);
    t.push_back(c.verdict.value_or("-"));
    j["verdict"] = c.verdict ? nlohmann::json(*c.verdict) : nullptr;
    j["best"] = best && *best == i;
    text.push_back(std::move(t));
    raw.push_back(std::move(j));
  }

  std::vector<size_t> order(cells.size());
  std::iota(order.begin(), order.end(), 0);
  if (!options.sort.empty()) {
    bool descending = options.sort == "throughput";
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const auto& va = raw[a][options.sort];
      const auto& vb = raw[b][options.sort];
      if (value_less(va, vb, descending)) return true;
      if (value_less(vb, va, descending)) return false;
      return cells[a].index < cells[b].index;
    });
  }

  Table table(l.columns);
  for (size_t row = 0; row < order.size(); ++row) {
    table.add_row(std::move(text[order[row]]), std::move(raw[order[row]]));
    if (best && *best == order[row]) table.mark(row);
  }
  return table;
}

}  // namespace nodus::sweep
