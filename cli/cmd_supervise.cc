// nodus __supervise: the supervisor of a detached job or a sweep cell, in a process of its own.
// Not for users: `run --detach` and `sweep` start it with a ticket on stdin
// (engine/supervise_main.h).

#include "cli/common.h"
#include "cli/sweep_command.h"
#include "engine/supervise_main.h"

namespace nodus::cli {

int supervise() { return engine::supervise_main(supervise_sweep); }

Command add_supervise(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("__supervise", "");
  sub->group("");  // hidden
  return {sub, supervise};
}

}  // namespace nodus::cli
