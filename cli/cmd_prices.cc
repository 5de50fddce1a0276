// nodus prices: the price catalog in force.

#include <cstdio>

#include "billing/prices_table.h"
#include "cli/args.h"
#include "cli/common.h"

namespace nodus::cli {
namespace {
struct PricesCommand {
  std::string prices;
  std::string format = "table";
  int operator()() const {
    Format f = format_from(format);
    billing::Catalog catalog = load_catalog(prices);
    print(billing::prices_table(catalog).render(f));
    if (f == Format::kTable) std::fprintf(stderr, "nodus: catalog: %s\n", catalog.origin().c_str());
    return 0;
  }
};
}  // namespace

Command add_prices(CLI::App& app) {
  auto cmd = std::make_shared<PricesCommand>();
  CLI::App* sub = app.add_subcommand("prices", "list the GPU price catalog");
  set_examples(sub, {"nodus prices", "nodus prices --prices my-prices.json --format json"});
  sub->add_option("--prices", cmd->prices, "price catalog: a JSON file or an https URL")
      ->type_name("FILE|URL");
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
