#include "sweep/compare.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "core/parse.h"
#include "core/table_fields.h"
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
  if (!c.unsteady.empty()) return c.state + " (warm-up only)";
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
  std::vector<std::pair<std::string, std::string>> metric_keys;  // (metric name, column key)
  bool repeated = false;
  bool tokens = false;  // every cell with a throughput counts tokens
  std::string throughput_header = "THROUGHPUT";
};

bool counts_tokens(const CellResult& c) { return c.throughput_metric == "tokens_per_sec"; }

Layout layout_for(const std::vector<CellResult>& cells) {
  static const std::set<std::string> kFixed = {
      "cell",      "params",       "status",
      "exit_code", "wall_s",       "gpu_seconds",
      "cost_usd",  "throughput",   "usd_per_million_samples",
      "data_wait", "util_mean",    "idle_usd",
      "verdict",   "best",         "schema_version",
      "steady",    "job_id",       "job_ids",
      "runs",      "slowest_rank", "throughput_metric",
      "mfu"};
  Layout l;
  std::set<std::string> metric_names;
  int with_tp = 0, with_tokens = 0;
  for (const auto& c : cells)
    if (c.throughput) ++with_tp, with_tokens += counts_tokens(c);
  l.tokens = with_tp > 0 && with_tokens == with_tp;
  // The throughput's unit in its header: the metric every cell with a throughput shares
  // (samples/s by default, a --throughput metric by its own name); THROUGHPUT when they differ.
  std::set<std::string> tp_metrics;
  for (const auto& c : cells)
    if (c.throughput)
      tp_metrics.insert(c.throughput_metric.empty() ? "samples_per_sec" : c.throughput_metric);
  l.throughput_header = tp_metrics.size() != 1                     ? "THROUGHPUT"
                        : *tp_metrics.begin() == "tokens_per_sec"  ? "TOKENS/S"
                        : *tp_metrics.begin() == "samples_per_sec" ? "SAMPLES/S"
                                                                   : *tp_metrics.begin();
  for (const auto& c : cells) {
    l.repeated |= c.runs > 1;
    for (const auto& [name, v] : c.metrics) metric_names.insert(name);
  }
  std::set<std::string> taken = kFixed;
  l.columns.push_back({"cell", "CELL", true});
  if (!cells.empty()) {
    for (const auto& p : cells.front().params) {
      std::string key = kFixed.count(p.name) ? "param_" + p.name : p.name;
      l.param_keys.push_back(key);
      taken.insert(key);
      l.columns.push_back({key, p.name, false});
    }
  }
  l.columns.push_back({"status", "STATUS"});
  l.columns.push_back({"job_id", "JOB", true});
  if (l.repeated) l.columns.push_back({"runs", "RUNS", true});
  l.columns.push_back({"wall_s", "WALL", true});
  l.columns.push_back({"cost_usd", "COST", true});
  l.columns.push_back({"throughput", l.throughput_header, true});
  l.columns.push_back({"usd_per_million_samples", l.tokens ? "$/M TOKENS" : "$/M SAMPLES", true});
  l.columns.push_back({"data_wait", "DATA WAIT", true});
  // json and csv always carry these; the table shows them when some cell has a value.
  l.columns.push_back({"util_mean", "UTIL %", true, Show::kIfAny});
  l.columns.push_back({"mfu", "MFU %", true, Show::kIfAny});
  l.columns.push_back({"idle_usd", "IDLE $", true, Show::kIfAny});
  l.columns.push_back({"verdict", "VERDICT", false, Show::kIfAny});
  l.columns.push_back({"slowest_rank", "SLOWEST RANK", false, Show::kIfAny});
  // One column per metric the sweep's jobs reported (docs/output.md).
  for (const auto& name : metric_names) {
    std::string key =
        taken.count(name) || (name.size() > 3 && name.substr(name.size() - 3) == "_sd")
            ? "metric_" + name
            : name;
    l.metric_keys.push_back({name, key});
    l.columns.push_back({key, name, true});
  }
  // A repeated sweep's cells also carry every run's job id and the spread of each figure
  // (json and csv; the table shows "mean ± sd"). Machine-only columns stay last: a row's text
  // covers the columns before them.
  if (l.repeated) {
    l.columns.push_back({"job_ids", "JOBS", false, Show::kMachine});
    for (const char* key : {"wall_s", "cost_usd", "throughput", "usd_per_million_samples"})
      l.columns.push_back(
          {std::string(key) + "_sd", std::string(key) + " sd", true, Show::kMachine});
    for (const auto& [name, key] : l.metric_keys)
      l.columns.push_back({key + "_sd", name + " sd", true, Show::kMachine});
  }
  l.columns.push_back({"throughput_metric", "THROUGHPUT METRIC", false, Show::kMachine});
  l.columns.push_back({"gpu_seconds", "GPU-S", true, Show::kMachine});
  l.columns.push_back({"exit_code", "EXIT", true, Show::kMachine});
  l.columns.push_back({"params", "PARAMS", false, Show::kMachine});
  l.columns.push_back({"steady", "STEADY", false, Show::kMachine});
  l.columns.push_back({"best", "BEST", false, Show::kMachine});
  return l;
}

}  // namespace

std::optional<double> usd_per_million_samples(const CellResult& c) {
  if (!c.throughput || *c.throughput <= 0 || c.wall_s <= 0) return std::nullopt;
  return c.cost / (*c.throughput * c.wall_s) * 1e6;
}

Result<Objective> parse_objective(std::string_view text) {
  Objective o;
  if (text.empty()) return o;
  auto colon = text.rfind(':');
  std::string name(text.substr(0, colon));
  std::string dir = colon == std::string_view::npos ? "" : std::string(text.substr(colon + 1));
  if (!is_param_name(name) && name.find_first_of(".-/") == std::string::npos)
    return Error::permanent("--objective '" + std::string(text) +
                            "': expected NAME[:max|min], NAME a metric the job reports or "
                            "throughput, cost_per_msample, wall, cost");
  o.name = name;
  if (dir == "max" || dir == "min") {
    o.maximize = dir == "max";
  } else if (!dir.empty()) {
    return Error::permanent("--objective '" + std::string(text) + "': invalid direction '" + dir +
                            "': expected max or min");
  } else if (name == "throughput") {
    o.maximize = true;
  } else if (name == "cost_per_msample" || name == "wall" || name == "cost") {
    o.maximize = false;
  } else {
    return Error::permanent("--objective '" + std::string(text) + "': say " + name + ":max or " +
                            name + ":min (nodus does not guess which way a metric is better)");
  }
  return o;
}

namespace {

std::string sample_key(const Objective& o) {
  if (o.name == "throughput") return "throughput";
  if (o.name == "cost_per_msample") return "usd_per_million_samples";
  if (o.name == "wall") return "wall_s";
  if (o.name == "cost") return "cost_usd";
  return "metric:" + o.name;
}

std::vector<double> objective_runs(const CellResult& c, const Objective& o) {
  auto it = c.samples.find(sample_key(o));
  if (it != c.samples.end() && !it->second.empty()) return it->second;
  if (auto v = objective_value(c, o)) return {*v};
  return {};
}

// Throughput and what a sample costs are rates: a cell's warm-up says nothing of its steady one.
bool is_rate(const Objective& o) { return o.name == "throughput" || o.name == "cost_per_msample"; }

// Completed with a figure, but that figure is warm-up's: not ranked.
bool warm_up_only(const CellResult& c, const Objective& o) {
  return c.state == "completed" && !c.unsteady.empty() && is_rate(o) &&
         objective_value(c, o).has_value();
}

bool qualifies(const CellResult& c, const Objective& o) {
  return c.state == "completed" && objective_value(c, o).has_value() && !warm_up_only(c, o);
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double m = mean_of(v), ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// The cell by every param that varies among the cells (so two cells never read the same), or
// "cell N" when none does.
std::string label_in(const std::vector<CellResult>& cells, const CellResult& a) {
  std::vector<Param> ap;
  for (size_t k = 0; k < a.params.size(); ++k) {
    bool varies = false;
    for (const auto& c : cells)
      varies |= k < c.params.size() && c.params[k].value != a.params[k].value;
    if (varies) ap.push_back(a.params[k]);
  }
  return ap.empty() ? "cell " + std::to_string(a.index) : cell_label(ap);
}

// "cells 2, 5 (still in warm-up at the end)": the completed cells not ranked for warm-up.
std::string warm_up_cells(const std::vector<CellResult>& cells, const Objective& o) {
  std::string names, why;
  for (const auto& c : cells) {
    if (!warm_up_only(c, o)) continue;
    names += (names.empty() ? "" : ", ") + label_in(cells, c);
    if (why.empty()) why = c.unsteady;
  }
  return names.empty() ? "" : names + " (" + why + ")";
}

std::string figure(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A spread in dollars as the table shows money, but never a spread that is not zero as
// "$0.0000": two significant figures where the usual decimals would hide it ("$0.000010").
std::string usd_spread(double sd) {
  std::string text = format_usd(sd);
  if (sd > 0 && text.find_first_of("123456789") == std::string::npos) {
    const int decimals = std::min(12, 1 - static_cast<int>(std::floor(std::log10(sd))));
    char buf[64];
    std::snprintf(buf, sizeof buf, "$%.*f", decimals, sd);
    text = buf;
  }
  return text;
}

// Seconds as the WALL column shows them: "37.3s", "4m05s".
std::string wall_text(double seconds) {
  return format_duration(std::chrono::milliseconds(std::llround(seconds * 1000)));
}

// An objective's value as the table shows that figure: dollars for cost and cost_per_msample,
// the throughput's format for throughput, seconds for wall, else a plain number.
std::string objective_text(const std::string& objective, double v, bool spread = false) {
  if (objective == "cost" || objective == "cost_per_msample")
    return spread ? usd_spread(v) : format_usd(v);
  if (objective == "throughput") return format_throughput(v);
  if (objective == "wall") return wall_text(v);
  return figure(v);
}

std::string p_text(double p) {
  char buf[64];
  if (p < 0.001)
    std::snprintf(buf, sizeof buf, "p < 0.001");
  else
    std::snprintf(buf, sizeof buf, "p = %.2g", p);
  return buf;
}

}  // namespace

std::optional<double> objective_value(const CellResult& c, const Objective& o) {
  if (o.name == "throughput") return c.throughput;
  if (o.name == "cost_per_msample") return usd_per_million_samples(c);
  if (o.name == "wall") return c.wall_s > 0 ? std::optional<double>(c.wall_s) : std::nullopt;
  if (o.name == "cost") return c.cost;
  auto it = c.metrics.find(o.name);
  if (it == c.metrics.end()) return std::nullopt;
  return it->second;
}

std::optional<Welch> welch_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double va = sd_of(a) * sd_of(a) / na, vb = sd_of(b) * sd_of(b) / nb;
  const double diff = mean_of(a) - mean_of(b);
  Welch w;
  if (va + vb == 0) {  // no spread at all: equal means are a tie, different ones are not
    w.t = diff == 0 ? 0 : std::copysign(INFINITY, diff);
    w.df = na + nb - 2;
    w.p = diff == 0 ? 1 : 0;
    return w;
  }
  w.t = diff / std::sqrt(va + vb);
  w.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  boost::math::students_t dist(w.df);
  w.p = 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(w.t)));
  return w;
}

Ranking rank_cells(const std::vector<CellResult>& cells, const Objective& o) {
  std::vector<size_t> order;
  for (size_t i = 0; i < cells.size(); ++i)
    if (qualifies(cells[i], o)) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    double x = *objective_value(cells[a], o), y = *objective_value(cells[b], o);
    if (x != y) return o.maximize ? x > y : x < y;
    return cells[a].index < cells[b].index;
  });
  Ranking r;
  if (order.empty()) return r;
  r.top = order[0];
  if (order.size() < 2) {
    // One cell alone is the best, unless the others were left out for their warm-up.
    bool others_unjudged = std::any_of(cells.begin(), cells.end(),
                                       [&](const CellResult& c) { return warm_up_only(c, o); });
    if (!others_unjudged) r.best = order[0];
    return r;
  }
  r.runner_up = order[1];
  const CellResult& b = cells[order[0]];
  const CellResult& u = cells[order[1]];
  r.welch = welch_test(objective_runs(b, o), objective_runs(u, o));
  if (r.welch) {
    r.tie = !(r.welch->p < 0.05);
  } else {
    double x = *objective_value(b, o), y = *objective_value(u, o);
    double scale = std::max(std::fabs(x), std::fabs(y));
    r.tie = scale == 0 || std::fabs(x - y) / scale < kSingleRunMargin;
  }
  if (!r.tie) r.best = order[0];
  return r;
}

std::optional<size_t> best_cell(const std::vector<CellResult>& cells, const Objective& o) {
  return rank_cells(cells, o).best;
}

namespace {
std::string summary_of(const std::vector<CellResult>& cells, const Objective& o, const Ranking& r) {
  const CellResult& b = cells[*r.top];
  const CellResult& u = cells[*r.runner_up];
  auto label = [&](const CellResult& c) { return label_in(cells, c); };
  auto runs_text = [&] {
    return b.runs == u.runs ? std::to_string(b.runs) + " runs each"
                            : std::to_string(b.runs) + " and " + std::to_string(u.runs) + " runs";
  };
  auto with_sd = [&](const CellResult& c) {
    auto v = objective_runs(c, o);
    std::string s = objective_text(o.name, mean_of(v));
    if (v.size() > 1) s += " ± " + objective_text(o.name, sd_of(v), true);
    return s;
  };
  if (r.tie) {
    std::string out = "no best cell: " + label(b) + " and " + label(u) +
                      " are not distinguishable on " + o.name + " (" + with_sd(b) + " vs " +
                      with_sd(u);
    if (r.welch)
      return out + "; Welch's t-test " + p_text(r.welch->p) + " over " + runs_text() + ")";
    return out + ", within " + fixed(kSingleRunMargin * 100, 0) +
           "% with one run each); --repeat 3 tells a difference from noise";
  }
  std::string test = r.welch ? " (" + with_sd(b) + " vs " + with_sd(u) + ", Welch's t-test " +
                                   p_text(r.welch->p) + " over " + runs_text() + ")"
                             : "";
  if (o.name != "throughput" || !o.maximize)
    return label(b) + ": the best " + o.text() + " (" + with_sd(b) + "; runner-up " + label(u) +
           ": " + with_sd(u) + ")" +
           (r.welch ? ", Welch's t-test " + p_text(r.welch->p) + " over " + runs_text() : "");

  // Throughput: the best against the runner-up, and what a sample costs in each.
  const bool tokens = counts_tokens(b) && counts_tokens(u);
  std::string out =
      label(b) + ": " + format_ratio(*b.throughput / *u.throughput) +
      (tokens ? "x the tokens/s of the runner-up " : "x the throughput of the runner-up ") +
      label(u);
  if (comparable(u) && comparable(b) && cost_per_sample(u) > 0)
    out += " at " + format_ratio(cost_per_sample(b) / cost_per_sample(u)) +
           (tokens ? "x the cost per token" : "x the cost per sample");
  return out + test;
}
}  // namespace

std::string workers_sentence(const std::vector<CellResult>& cells) {
  std::vector<const CellResult*> measured;
  std::set<int> workers;
  for (const auto& c : cells)
    if (c.state == "completed" && c.unsteady.empty() && c.loader_workers && c.data_wait &&
        c.throughput) {
      measured.push_back(&c);
      workers.insert(*c.loader_workers);
    }
  // Other axes too (two cells with one num_workers): which cells to hold side by side is not
  // nodus's to guess.
  if (measured.size() < 2 || workers.size() != measured.size()) return "";
  std::sort(measured.begin(), measured.end(), [](const CellResult* a, const CellResult* b) {
    return *a->loader_workers < *b->loader_workers;
  });
  auto name = [&](const CellResult& c) {
    const std::string workers = "num_workers=" + std::to_string(*c.loader_workers);
    const std::string label = label_in(cells, c);
    return label + " (" + (label.find(workers) == std::string::npos ? workers + ", " : "") +
           "data wait " + fixed(100 * *c.data_wait, 0) + "%)";
  };
  const CellResult* smallest = nullptr;
  const CellResult* fastest = measured.front();
  const CellResult* lowest = measured.front();
  for (const CellResult* c : measured) {
    if (!smallest && *c->data_wait <= kLoaderWaitLine) smallest = c;
    if (*c->throughput > *fastest->throughput) fastest = c;
    if (*c->data_wait < *lowest->data_wait) lowest = c;
  }
  const std::string line = fixed(100 * kLoaderWaitLine, 0) + "%";
  if (!smallest)
    return "loader: no num_workers tried brought the data wait to " + line +
           " or less; the lowest, " + name(*lowest) +
           ", still waits on its loader: try more workers, or a cheaper transform";
  std::string out = "loader: " + name(*smallest) +
                    " is the smallest num_workers whose data wait is " + line + " or less";
  if (fastest == smallest) return out + ", and the fastest";
  const double ratio = *fastest->throughput / *smallest->throughput;
  const int more = *fastest->loader_workers - *smallest->loader_workers;
  out += "; the fastest, " + name(*fastest) + ", has " + fixed(ratio, 2) + "x its throughput";
  if (more > 0) out += " for " + std::to_string(more) + " more worker" + (more == 1 ? "" : "s");
  if (ratio < 1 + kSingleRunMargin)
    out += ", within the " + fixed(kSingleRunMargin * 100, 0) +
           "% one run can vary: the extra workers buy nothing measured";
  return out;
}

std::string summary_sentence(const std::vector<CellResult>& cells, const Objective& o) {
  Ranking r = rank_cells(cells, o);
  const std::string unjudged = warm_up_cells(cells, o);
  const std::string advice =
      ": their figures include the warm-up; run more steps or a shorter --warmup (0s takes the "
      "figures as they are)";
  if (!unjudged.empty() && (!r.top || !r.runner_up)) {
    std::string out = "no best cell: ";
    if (r.top) out += "only " + label_in(cells, cells[*r.top]) + " reached its steady state; ";
    return out + "not compared on " + o.name + ": " + unjudged + advice;
  }
  if (!r.top || !r.runner_up) return "";
  const std::string left_out =
      unjudged.empty() ? "" : "; not compared on " + o.name + ": " + unjudged + advice;
  return summary_of(cells, o, r) + left_out;
}

Result<Table> compare_table(const std::vector<CellResult>& cells, const CompareOptions& options) {
  Layout l = layout_for(cells);
  auto known_key = [&](const std::string& key) {
    for (const auto& col : l.columns)
      if (col.key == key) return true;
    return false;
  };
  // params is an object: nothing to order by.
  auto sortable = [&](const std::string& key) { return key != "params" && known_key(key); };
  auto sort_keys = [&] {
    std::string out;
    for (const auto& col : l.columns)
      if (col.key != "params") out += (out.empty() ? "" : ", ") + col.key;
    return out;
  };
  auto keys = [&] {
    std::string out;
    for (const auto& col : l.columns) out += (out.empty() ? "" : ", ") + col.key;
    return out;
  };
  if (!options.sort.empty() && !sortable(options.sort))
    return Error::permanent("--sort: unknown column '" + options.sort + "': expected one of " +
                            sort_keys());
  for (const auto& key : options.columns)
    if (!known_key(key))
      return Error::permanent("--columns: unknown column '" + key + "': expected one of " + keys());
  auto best = best_cell(cells, options.objective);

  // "mean ± sd" for a repeated cell's figure, else the figure.
  auto shown = [](const CellResult& c, const std::string& key, const std::string& mean_text,
                  std::string (*format)(double)) {
    auto it = c.samples.find(key);
    if (c.runs < 2 || it == c.samples.end() || it->second.size() < 2) return mean_text;
    return mean_text + " ± " + format(sd_of(it->second));
  };
  auto put_sd = [&](nlohmann::json& j, const CellResult& c, const std::string& sample,
                    const std::string& key) {
    if (!l.repeated) return;
    auto it = c.samples.find(sample);
    j[key + "_sd"] = it != c.samples.end() && it->second.size() > 1
                         ? nlohmann::json(sd_of(it->second))
                         : nlohmann::json();
  };

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
    t.push_back(c.job_ids.empty() ? "-" : std::to_string(c.job_ids.back()));
    if (l.repeated) t.push_back(std::to_string(c.runs));
    // A cell that never ran has no time and no bill to show, not "0ms $0.00".
    const bool ran = !(c.job_ids.empty() && (c.state == "not run" || c.state == "pending"));
    t.push_back(ran ? shown(c, "wall_s", wall_text(c.wall_s), wall_text) : "-");
    t.push_back(ran ? shown(c, "cost_usd", format_usd(c.cost), usd_spread) : "-");
    t.push_back(c.throughput
                    ? shown(c, "throughput", format_throughput(*c.throughput), format_throughput)
                    : "-");
    t.push_back(per_m ? shown(c, "usd_per_million_samples", format_usd(*per_m), usd_spread) : "-");
    t.push_back(or_dash(c.data_wait, [](double v) { return fixed(v * 100, 0) + "%"; }));
    j["status"] = c.state;
    j["exit_code"] = c.exit_code ? nlohmann::json(*c.exit_code) : nullptr;
    j["job_id"] = c.job_ids.empty() ? nlohmann::json() : nlohmann::json(c.job_ids.back());
    if (l.repeated) {
      j["runs"] = c.runs;
      j["job_ids"] = c.job_ids;
    }
    j["wall_s"] = c.wall_s;
    j["gpu_seconds"] = c.gpu_seconds;
    j["cost_usd"] = c.cost;
    j["throughput"] = or_null(c.throughput);
    j["throughput_metric"] =
        c.throughput
            ? nlohmann::json(c.throughput_metric.empty() ? "samples_per_sec" : c.throughput_metric)
            : nlohmann::json();
    j["usd_per_million_samples"] = or_null(per_m);
    j["data_wait"] = or_null(c.data_wait);
    j["steady"] = c.state == "completed" ? nlohmann::json(c.unsteady.empty()) : nlohmann::json();
    put_sd(j, c, "wall_s", "wall_s");
    put_sd(j, c, "cost_usd", "cost_usd");
    put_sd(j, c, "throughput", "throughput");
    put_sd(j, c, "usd_per_million_samples", "usd_per_million_samples");
    t.push_back(or_dash(c.util_mean, [](double v) { return fixed(v, 0); }));
    // Percent in the table, a fraction 0-1 in json and csv (docs/output.md).
    j["util_mean"] = c.util_mean ? nlohmann::json(*c.util_mean / 100.0) : nullptr;
    t.push_back(or_dash(c.mfu, [](double v) { return fixed(v * 100, 1); }));
    j["mfu"] = or_null(c.mfu);
    t.push_back(or_dash(c.idle_usd, format_usd));
    j["idle_usd"] = or_null(c.idle_usd);
    t.push_back(c.verdict.value_or("-"));
    j["verdict"] = c.verdict ? nlohmann::json(*c.verdict) : nullptr;
    t.push_back(c.slowest_rank.value_or("-"));
    j["slowest_rank"] = c.slowest_rank ? nlohmann::json(*c.slowest_rank) : nullptr;
    for (const auto& [name, key] : l.metric_keys) {
      auto it = c.metrics.find(name);
      if (it == c.metrics.end()) {
        t.push_back("-");
        j[key] = nullptr;
      } else {
        t.push_back(shown(c, "metric:" + name, figure(it->second), figure));
        j[key] = it->second;
      }
      put_sd(j, c, "metric:" + name, key);
    }
    t.resize(l.columns.size());  // the machine-only columns at the end have no text
    j["best"] = best && *best == i;
    text.push_back(std::move(t));
    raw.push_back(std::move(j));
  }

  std::vector<size_t> order(cells.size());
  std::iota(order.begin(), order.end(), 0);
  if (!options.sort.empty()) {
    // Best first for the objective's own column; throughput descending; others ascending.
    bool descending = options.sort == "throughput";
    for (const auto& [name, key] : l.metric_keys)
      if (key == options.sort && name == options.objective.name)
        descending = options.objective.maximize;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const auto& va = raw[a][options.sort];
      const auto& vb = raw[b][options.sort];
      if (value_less(va, vb, descending)) return true;
      if (value_less(vb, va, descending)) return false;
      return cells[a].index < cells[b].index;
    });
  }

  // --columns: the cell's number first, then the chosen columns in the order given.
  std::vector<size_t> keep;
  if (options.columns.empty()) {
    for (size_t k = 0; k < l.columns.size(); ++k) keep.push_back(k);
  } else {
    keep.push_back(0);
    for (const auto& key : options.columns)
      for (size_t k = 1; k < l.columns.size(); ++k)
        if (l.columns[k].key == key) keep.push_back(k);
  }
  std::vector<Column> columns;
  for (size_t k : keep) columns.push_back(l.columns[k]);
  Table table(columns);
  for (size_t row = 0; row < order.size(); ++row) {
    std::vector<std::string> t;
    for (size_t k : keep) t.push_back(std::move(text[order[row]][k]));
    table.add_row(std::move(t), std::move(raw[order[row]]));
    if (best && *best == order[row]) table.mark(row);
  }
  return table;
}

}  // namespace nodus::sweep
