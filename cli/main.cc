// nodus: runs GPU jobs with hard cost caps, sweeps their knobs, and says why the GPU idles.
// main() is the one place that turns errors into exit codes.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/text.h"
#include "core/timing.h"

int main(int argc, char** argv) {
  using namespace nodus;
  timing::step("main");
  // Every error is one line of valid UTF-8 whatever the user typed into the value it names.
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "nodus: %s\n", escape_control(message).c_str());
  };
  // What an action throws: its message on one line, its exit code.
  auto act = [&fail](const std::function<int()>& action) {
    try {
      const int rc = action();
      timing::step("command's objects destroyed");
      return rc;
    } catch (const Fatal& e) {
      fail(e.what());
      return e.code();
    } catch (const std::exception& e) {
      fail(std::string("internal error: ") + e.what());
      return exit_code::kNodusError;
    }
  };
  // The supervisor of a detached job or a sweep cell takes no arguments, only the ticket on its
  // stdin: it skips building the parsers of every subcommand (1.5 ms of CPU, once per cell).
  if (argc == 2 && std::string_view(argv[1]) == "__supervise") return act(cli::supervise);
  CLI::App app{"nodus: run GPU jobs with hard cost caps, sweep them, and see what idle GPUs cost"};
  app.formatter(std::make_shared<cli::HelpFormatter>());  // inherited by every subcommand
  app.set_version_flag("--version", "nodus 0.1.0");
  app.require_subcommand(1);
  std::vector<cli::Command> commands = {
      cli::add_run(app),    cli::add_sweep(app),     cli::add_ps(app),         cli::add_show(app),
      cli::add_logs(app),   cli::add_stop(app),      cli::add_sweeps(app),     cli::add_cost(app),
      cli::add_prices(app), cli::add_estimate(app),  cli::add_report(app),     cli::add_config(app),
      cli::add_gpus(app),   cli::add_supervise(app), cli::add_completion(app), cli::add_wait(app),
      cli::add_try(app),
  };
  // Every subcommand's options on one page: what help2man turns into the man page. Set after
  // the subcommands are made, so they do not inherit it (their --help stays their own).
  app.set_help_all_flag("--help-all", "print help for every command");
  app.footer(exit_code::help_text());
  cli::harden(app);
  // Bare `nodus`: what it is for and how to start, as docker and kubectl answer (exit 0).
  if (argc == 1) {
    std::printf(
        "Usage: nodus COMMAND [OPTIONS] [-- CMD [ARGS...]]\n\n"
        "Run GPU jobs with hard cost caps, sweep their knobs, and see what idle GPUs cost.\n\n"
        "Examples:\n"
        "  nodus run --gpu H100 --max-cost 5 --timeout 2h -- python train.py\n"
        "  nodus sweep --param num_workers=0,4,8 --budget 2 -- python train.py\n"
        "  nodus ps                 jobs running now (-a: all)\n"
        "  nodus show 42            one job: its cost, utilization and what to fix first\n"
        "  nodus logs -f 42         its output\n"
        "  nodus stop 42\n\n"
        "Commands: run, sweep, ps, show, logs, stop, wait, sweeps, cost, prices, estimate, "
        "report,\n          config, gpus, completion\n\n"
        "nodus COMMAND --help for one command, nodus --help-all for all of them.\n");
    return 0;
  }
  try {
    // The job's command (after "--", or from the first plain word of `run`/`sweep`) never
    // reaches CLI11; every other argument must be an option CLI11 knows, or parsing fails.
    auto line = cli::split_command_line(app, std::vector<std::string>(argv + 1, argv + argc));
    if (line.has_command) cli::set_trailing_command(line.command);
    std::vector<std::string> reversed(line.options.rbegin(), line.options.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fail(cli::parse_error_message(app, e));
    return exit_code::kNodusError;
  } catch (const Fatal& e) {
    fail(e.what());
    return e.code();
  }
  timing::step("parsed");
  for (auto& c : commands)
    if (c.app->parsed()) return act(c.action);
  return exit_code::kNodusError;
}
