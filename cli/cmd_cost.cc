// nodus cost: what was spent, by day and by GPU type.

#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/parse.h"
#include "engine/reconcile.h"

namespace nodus::cli {

namespace {

Table spend_table(const std::vector<store::Store::SpendRow>& rows, const char* key,
                  const char* header) {
  Table t({{key, header},
           {"jobs", "JOBS", true},
           {"gpu_hours", "GPU-HOURS", true},
           {"cost_usd", "COST", true}});
  double jobs = 0, hours = 0, cost = 0;
  char buf[32];
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%.2f", r.gpu_hours);
    t.add_row({r.key, std::to_string(r.jobs), buf, format_usd(r.cost)},
              {{key, r.key}, {"jobs", r.jobs}, {"gpu_hours", r.gpu_hours}, {"cost_usd", r.cost}});
    jobs += r.jobs;
    hours += r.gpu_hours;
    cost += r.cost;
  }
  std::snprintf(buf, sizeof buf, "%.2f", hours);
  if (!rows.empty())
    t.add_row({"total", std::to_string(static_cast<int>(jobs)), buf, format_usd(cost)},
              {{key, "total"}, {"jobs", jobs}, {"gpu_hours", hours}, {"cost_usd", cost}});
  return t;
}

struct CostCommand {
  std::string by;
  std::string since;
  std::string format = "table";

  int operator()() const {
    Format f = format_from(format);
    if (!by.empty() && by != "day" && by != "gpu")
      throw Fatal("--by: invalid value '" + by + "': expected day or gpu");
    std::optional<double> from;
    if (!since.empty())
      from = unix_now() - value_or_throw(parse_duration(since, "--since")).count() / 1000.0;
    auto store = open_store();
    engine::reconcile(*store);
    Table days = spend_table(store->spend_by_day(from), "day", "DAY");
    Table gpus = spend_table(store->spend_by_gpu(from), "gpu_type", "GPU TYPE");
    if (by == "day") return print(days.render(f)), 0;
    if (by == "gpu") return print(gpus.render(f)), 0;
    if (f == Format::kJson) {
      print(dump_json(nlohmann::json{{"by_day", days.raw_rows()}, {"by_gpu", gpus.raw_rows()}}) +
            "\n");
    } else if (f == Format::kCsv) {
      print(days.render(f));
    } else {
      print(days.render(f) + "\n" + gpus.render(f));
    }
    return 0;
  }
};
}  // namespace

Command add_cost(CLI::App& app) {
  auto cmd = std::make_shared<CostCommand>();
  CLI::App* sub = app.add_subcommand("cost", "spend by day and by GPU type");
  set_examples(sub, {"nodus cost", "nodus cost --since 7d --by gpu", "nodus cost --format csv"});
  sub->add_option("--by", cmd->by, "day or gpu (default: both; csv: day)")
      ->type_name("day|gpu")
      ->check(one_of({"day", "gpu"}));
  sub->add_option("--since", cmd->since, "only jobs created in the last DURATION (7d, 24h)")
      ->type_name("DURATION")
      ->check(duration_value());
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
