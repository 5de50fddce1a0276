#include "cli/sweep_views.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/sweep_results.h"
#include "core/error.h"
#include "core/table_fields.h"
#include "sweep/compare.h"

namespace nodus::cli {

std::string sweep_objective(const store::SweepRecord& sweep, const std::string& flag) {
  return flag.empty() ? sweep.definition->value("objective", "") : flag;
}

void print_sweep(store::Store& store, const store::SweepRecord& sweep, const SweepView& view,
                 Format format) {
  if (!sweep.damaged.empty()) std::fprintf(stderr, "nodus: %s\n", sweep.damaged.c_str());
  SweepResults results = load_sweep_results(store, sweep);
  sweep::CompareOptions options;
  options.sort = view.sort;
  options.objective =
      value_or_throw(sweep::parse_objective(sweep_objective(sweep, view.objective)));
  for (const auto& c : view.columns) {
    size_t pos = 0;
    while (pos <= c.size()) {
      size_t comma = std::min(c.find(',', pos), c.size());
      if (comma > pos) options.columns.push_back(c.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  Table table = value_or_throw(sweep::compare_table(results.cells, options));
  std::string summary = sweep::summary_sentence(results.cells, options.objective);
  const std::string workers = sweep::workers_sentence(results.cells);
  if (format == Format::kJson) {
    auto best = sweep::best_cell(results.cells, options.objective);
    nlohmann::json out = {
        {"schema_version", kSchemaVersion},
        {"sweep",
         {{"id", "s" + std::to_string(sweep.id)},
          {"name", or_null(sweep.name)},
          {"state", sweep.state},
          {"command", sweep.argv},
          {"params", sweep.definition->value("params", nlohmann::json::array())},
          {"budget_usd", sweep.budget ? nlohmann::json(*sweep.budget) : nlohmann::json()},
          {"cost_usd", results.total_cost},
          {"objective", options.objective.text()},
          {"stopped_early", results.stopped_early},
          {"saved_usd", results.saved_usd},
          {"repeat", sweep.definition->value("repeat", 1)},
          {"created_at", sweep.created_at}}},
        {"cells", table.raw_rows()},
        {"best_cell", best ? nlohmann::json(results.cells[*best].index) : nlohmann::json()},
        {"summary", or_null(summary)},
        {"loader", or_null(workers)}};
    return print(dump_json(out) + "\n");
  }
  print(table.render(format));
  if (format == Format::kCsv) return;
  std::string tail =
      "\n" + sweep_label(sweep) + ": " + sweep.state + ", total " + format_usd(results.total_cost);
  if (sweep.budget) tail += " of " + format_usd(*sweep.budget) + " budget";
  if (results.stopped_early > 0)
    tail += "; " + std::to_string(results.stopped_early) +
            (results.stopped_early == 1 ? " cell" : " cells") + " stopped early, about " +
            format_usd(results.saved_usd) + " not spent";
  if (!summary.empty()) tail += "\n" + summary;
  if (!workers.empty()) tail += "\n" + workers;
  print(tail + "\n");
}

}  // namespace nodus::cli
