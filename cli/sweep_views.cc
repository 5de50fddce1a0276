#include "cli/sweep_views.h"

#include "cli/common.h"
#include "cli/sweep_results.h"
#include "core/error.h"
#include "sweep/compare.h"

namespace nodus::cli {

std::string sweep_label(const store::SweepRecord& sweep) {
  std::string id = "s" + std::to_string(sweep.id);
  return sweep.name.empty() ? id : id + " (" + sweep.name + ")";
}

void print_sweep(store::Store& store, const store::SweepRecord& sweep, const std::string& sort,
                 Format format) {
  SweepResults results = load_sweep_results(store, sweep);
  sweep::CompareOptions options;
  options.sort = sort;
  Table table = value_or_throw(sweep::compare_table(results.cells, options));
  std::string summary = sweep::summary_sentence(results.cells);
  if (format == Format::kJson) {
    auto best = sweep::best_cell(results.cells);
    nlohmann::json out = {
        {"schema_version", kSchemaVersion},
        {"sweep",
         {{"id", "s" + std::to_string(sweep.id)},
          {"name", or_null(sweep.name)},
          {"state", sweep.state},
          {"command", sweep.argv},
          {"params", sweep.definition.value("params", nlohmann::json::array())},
          {"budget_usd", sweep.budget ? nlohmann::json(*sweep.budget) : nlohmann::json()},
          {"cost_usd", results.total_cost},
          {"created_at", sweep.created_at}}},
        {"cells", table.raw_rows()},
        {"best_cell", best ? nlohmann::json(results.cells[*best].index) : nlohmann::json()},
        {"summary", or_null(summary)}};
    return print(dump_json(out) + "\n");
  }
  print(table.render(format));
  if (format == Format::kCsv) return;
  std::string tail =
      "\n" + sweep_label(sweep) + ": " + sweep.state + ", total " + format_usd(results.total_cost);
  if (sweep.budget) tail += " of " + format_usd(*sweep.budget) + " budget";
  if (!summary.empty()) tail += "\n" + summary;
  print(tail + "\n");
}

}  // namespace nodus::cli
