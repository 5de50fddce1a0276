// nodus prices: the price catalog in force.

#include <cstdio>

#include "billing/prices_table.h"
#include "cli/args.h"
#include "cli/common.h"

namespace nodus::cli {
namespace {
struct PricesCommand {
  std::string prices;
  bool prices_only = false;
  std::string format = "table";
  int operator()() const {
    Format f = format_from(format);
    billing::Catalog catalog = load_catalog(prices, prices_only);
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
  add_prices_flags(sub, cmd->prices, cmd->prices_only);
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
