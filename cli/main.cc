// nodus: runs GPU jobs with hard cost caps, sweeps their knobs, and says why the GPU idles.
// main() is the one place that turns errors into exit codes.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/common.h"
#include "core/error.h"

int main(int argc, char** argv) {
  using namespace nodus;
  CLI::App app{"nodus: run GPU jobs with hard cost caps, sweep them, and see what idle GPUs cost"};
  app.set_version_flag("--version", "nodus 0.1.0");
  app.require_subcommand(1);
  std::vector<cli::Command> commands = {
      cli::add_run(app),    cli::add_sweep(app),     cli::add_ps(app),     cli::add_show(app),
      cli::add_logs(app),   cli::add_stop(app),      cli::add_sweeps(app), cli::add_cost(app),
      cli::add_prices(app), cli::add_estimate(app),  cli::add_report(app), cli::add_config(app),
      cli::add_gpus(app),   cli::add_supervise(app),
  };
  // Everything after the first "--" is the job's command, whatever it looks like: CLI11 never sees
  // it.
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);  // CLI11 wants them reversed
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      cli::set_trailing_command(std::vector<std::string>(argv + i + 1, argv + argc));
      args = std::vector<std::string>(args.end() - (i - 1), args.end());
      break;
    }
  }
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "nodus: %s (see nodus --help)\n", e.what());
    return exit_code::kNodusError;
  }
  try {
    for (auto& c : commands)
      if (c.app->parsed()) return c.action();
  } catch (const Fatal& e) {
    std::fprintf(stderr, "nodus: %s\n", e.what());
    return e.code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nodus: internal error: %s\n", e.what());
    return exit_code::kNodusError;
  }
  return exit_code::kNodusError;
}
