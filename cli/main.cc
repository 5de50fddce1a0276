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

#include "backend/local/sentinel.h"
#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/secret.h"
#include "core/text.h"
#include "core/timing.h"

namespace {

struct Subcommand {
  const char* name;
  nodus::cli::Command (*add)(CLI::App&);
  bool alone = true;  // may be built without the others (completion lists them all)
};

// In the order of `nodus --help`.
constexpr Subcommand kSubcommands[] = {
    {"run", nodus::cli::add_run},
    {"sweep", nodus::cli::add_sweep},
    {"ps", nodus::cli::add_ps},
    {"show", nodus::cli::add_show},
    {"logs", nodus::cli::add_logs},
    {"stop", nodus::cli::add_stop},
    {"sweeps", nodus::cli::add_sweeps},
    {"cost", nodus::cli::add_cost},
    {"prices", nodus::cli::add_prices},
    {"estimate", nodus::cli::add_estimate},
    {"report", nodus::cli::add_report},
    {"config", nodus::cli::add_config},
    {"gpus", nodus::cli::add_gpus},
    {"__supervise", nodus::cli::add_supervise},
    {"completion", nodus::cli::add_completion, false},
    {"wait", nodus::cli::add_wait},
    {"try", nodus::cli::add_try},
};

struct Parser {
  std::unique_ptr<CLI::App> app;
  std::vector<nodus::cli::Command> commands;

  // True when the parser built for `only` is that subcommand's (the table above names it).
  bool complete_for(const Subcommand* only) const {
    return commands.size() == 1 && commands.front().app->get_name() == only->name;
  }
};

// The parser of every subcommand, or of `only`.
Parser make_parser(const Subcommand* only) {
  using namespace nodus;
  Parser p;
  p.app = std::make_unique<CLI::App>(
      "nodus: run GPU jobs with hard cost caps, sweep them, and see what idle GPUs cost");
  CLI::App& app = *p.app;
  app.formatter(std::make_shared<cli::HelpFormatter>());  // inherited by every subcommand
  app.set_version_flag("--version", "nodus 0.1.0");
  app.require_subcommand(1);
  for (const Subcommand& s : kSubcommands)
    if (!only || only == &s) p.commands.push_back(s.add(app));
  // Every subcommand's options on one page: what help2man turns into the man page. Set after
  // the subcommands are made, so they do not inherit it (their --help stays their own).
  app.set_help_all_flag("--help-all", "print help for every command");
  app.footer(exit_code::help_text());
  cli::harden(app);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nodus;
  // A local job's sentinel, started by its supervisor (backend/local/sentinel.h): nothing else.
  if (argc >= 2 && std::string_view(argv[1]) == backend::kSentinelCommand)
    backend::run_sentinel_command(argc, argv);
  backend::exec_sentinels();
  timing::step("main");
  // Every error is one line of valid UTF-8 whatever the user typed into the value it names, and
  // shows no credential that value held (a mistyped --api-key=..., a URL's password).
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "nodus: %s\n", escape_control(redact_text(message)).c_str());
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
  // `nodus run ...` builds the parser of `run` alone: every subcommand's (CLI11 checks each new
  // option against the others) was a million instructions, 1 ms of CPU, before each launch.
  // Anything but a clean parse (help for all, an error message that may name another
  // subcommand's option) is answered by the whole parser, as before.
  const Subcommand* only = nullptr;
  if (argc >= 2) {
    for (const Subcommand& s : kSubcommands)
      if (s.alone && std::string_view(argv[1]) == s.name) only = &s;
    for (int i = 2; i < argc && only; ++i)
      if (std::string_view(argv[i]) == "--help-all") only = nullptr;
  }
  // The one subcommand's parser stays alive beside the whole one: its subcommand stays
  // registered by address (cli/args.h), which no other object may take.
  Parser first = make_parser(only);
  Parser whole;
  Parser* parser = &first;
  auto use_whole = [&] {
    whole = make_parser(nullptr);
    parser = &whole;
  };
  if (only && !first.complete_for(only)) use_whole();
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
  // The job's command (after "--", or from the first plain word of `run`/`sweep`) never
  // reaches CLI11; every other argument must be an option CLI11 knows, or parsing fails.
  auto parse = [&](CLI::App& app) {
    auto line = cli::split_command_line(app, std::vector<std::string>(argv + 1, argv + argc));
    if (line.has_command) cli::set_trailing_command(line.command);
    std::vector<std::string> reversed(line.options.rbegin(), line.options.rend());
    app.parse(reversed);
  };
  bool parsed = false;
  if (parser == &first && only) {
    try {
      parse(*first.app);
      parsed = true;
    } catch (...) {
      use_whole();  // answered by the whole parser, below
    }
  }
  if (!parsed) {
    CLI::App& app = *parser->app;
    try {
      parse(app);
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
  }
  timing::step("parsed");
  for (auto& c : parser->commands)
    if (c.app->parsed()) return act(c.action);
  return exit_code::kNodusError;
}
