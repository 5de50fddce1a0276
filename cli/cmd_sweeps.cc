// nodus sweeps: every sweep with its cell counts, state and total cost.

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "cli/job_views.h"
#include "cli/sweep_views.h"
#include "core/parse.h"
#include "core/table_fields.h"
#include "engine/reconcile.h"

namespace nodus::cli {

namespace {
struct SweepsCommand {
  int limit = 50;
  std::string format = "table";
  int operator()() const {
    Format f = format_from(format);
    auto store = open_store_to_read();
    reconcile_to_read(*store);
    Table t({{"id", "ID"},
             {"name", "NAME"},
             {"state", "STATE"},
             {"cells", "CELLS", true},
             {"completed", "DONE", true},
             {"failed", "FAILED", true},
             {"stopped", "STOPPED", true},
             {"cost_usd", "COST", true},
             {"budget_usd", "BUDGET", true},
             {"created_at", "CREATED"},
             {"command", "COMMAND"}});
    for (auto& s : store->sweeps(limit)) {
      if (s.state == "running" && !store::process_alive(s.supervisor_pid, s.supervisor_start)) {
        s.state = "lost";  // its nodus process died (killed); --resume picks it up
        store->update_sweep(s);
      }
      if (!s.damaged.empty()) std::fprintf(stderr, "nodus: %s\n", s.damaged.c_str());
      auto cells = store->sweep_cells(s.id);
      // As sacct keeps COMPLETED, FAILED and CANCELLED/TIMEOUT apart: a cell a limit or a user
      // stopped did not fail.
      int completed = 0, failed = 0, stopped = 0;
      for (const auto& c : cells) {
        const bool done = c.state == JobState::kCompleted;
        const bool bad = is_failure(c.state);
        completed += done;
        failed += bad;
        stopped += is_final(c.state) && !done && !bad;
      }
      // Every attempt of every cell (not only the newest, as `cells` are), running ones too.
      const double cost = sweep_spent_now(*store, s.id, cells);
      int total = s.definition->value("cells", static_cast<int>(cells.size()));
      std::string cmd = command_line(s.argv);
      if (cmd.size() > 48) cmd = cmd.substr(0, 45) + "...";
      t.add_row({"s" + std::to_string(s.id), s.name.empty() ? "-" : s.name, s.state,
                 std::to_string(total), std::to_string(completed), std::to_string(failed),
                 std::to_string(stopped), format_usd(cost), s.budget ? format_usd(*s.budget) : "-",
                 ago(s.created_at), cmd},
                {{"id", "s" + std::to_string(s.id)},
                 {"name", or_null(s.name)},
                 {"state", s.state},
                 {"cells", total},
                 {"completed", completed},
                 {"failed", failed},
                 {"stopped", stopped},
                 {"cost_usd", cost},
                 {"budget_usd", s.budget ? nlohmann::json(*s.budget) : nlohmann::json()},
                 {"created_at", s.created_at},
                 {"command", s.argv}});
    }
    print(t.render(f));
    return 0;
  }
};
}  // namespace

Command add_sweeps(CLI::App& app) {
  auto cmd = std::make_shared<SweepsCommand>();
  CLI::App* sub = app.add_subcommand("sweeps", "list sweeps");
  set_examples(sub, {"nodus sweeps", "nodus sweeps -n 5 --format json"});
  sub->add_option("-n,--last", cmd->limit, "how many sweeps")
      ->type_name("N")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
