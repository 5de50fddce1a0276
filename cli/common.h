#pragma once
// What the subcommands share: the registry of commands, the run flags that `run` and `sweep`
// both take, and opening the store and the catalog the same way everywhere.

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "billing/catalog.h"
#include "core/table.h"
#include "engine/job_builder.h"
#include "store/store.h"

namespace nodus::cli {

using Action = std::function<int()>;

// Each cmd_*.cc adds its subcommand to `app` and returns what to run when it was chosen.
struct Command {
  CLI::App* app;
  Action action;
};

Command add_run(CLI::App& app);
Command add_sweep(CLI::App& app);
Command add_ps(CLI::App& app);
Command add_show(CLI::App& app);
Command add_logs(CLI::App& app);
Command add_stop(CLI::App& app);
Command add_cost(CLI::App& app);
Command add_prices(CLI::App& app);
Command add_estimate(CLI::App& app);
Command add_sweeps(CLI::App& app);
Command add_report(CLI::App& app);
Command add_config(CLI::App& app);
Command add_supervise(CLI::App& app);
// `nodus __supervise` itself: main() calls it without parsing (it takes no arguments).
int supervise();
Command add_gpus(CLI::App& app);
Command add_completion(CLI::App& app);
Command add_wait(CLI::App& app);
Command add_try(CLI::App& app);

// Flags shared by `run` and `sweep`, as typed; to_request() validates them.
struct RunFlags {
  std::string gpu = "none";
  std::string max_cost;
  std::string timeout;
  std::string grace = "10s";
  std::string name;
  std::vector<std::string> env;
  std::string workdir;
  std::string image;
  std::string backend;
  std::string nodes;  // --nodes N (Slurm only), checked by to_request
  std::string prices;
  bool prices_only = false;
  std::string rate;              // --rate USD_PER_HOUR
  std::string rate_per = "gpu";  // --rate-per gpu|box
  bool no_wait = false;
  std::string sample_interval = "1s";
  std::string min_util;
  std::string util_window = "5m";
  std::vector<std::string> metric_regex;
  std::string throughput = "samples_per_sec";
  bool no_instrument = false;
  bool profile = false;
  std::vector<std::string> loader;  // --loader KNOB=VALUE[,KNOB=VALUE]
  bool tf32 = false;                // --tf32
  std::string warmup = "5s";
  std::string measure;
  int cpus_per_gpu = 0;  // 0: the GPUs' whole share
  std::string log_limit = "1G";
  std::vector<std::string> command;
};
// `sweep`: --gpu may hold {NAME} placeholders (checked against the grid when the sweep plans).
void add_run_flags(CLI::App* sub, RunFlags& flags, bool sweep = false);
// The job's command as split off by split_command_line (cli/args.h): what followed "--", or
// `run`'s first plain word and everything after it. Empty when none was given.
void set_trailing_command(std::vector<std::string> command);
std::vector<std::string> job_command();
engine::JobRequest to_request(const RunFlags& flags);
// The --gpu value that asks for the job's GPUs: "H100-SXM:2", or "none".
std::string gpu_flag_value(const JobRecord& job);
// Runs a job attached, as `nodus run` does (cli/cmd_run.cc); `job_id` gets its id once stored.
int run_attached(const RunFlags& flags, int64_t* job_id);
// --loader's knobs reach a DataLoader only through nodus's Python hook: throws Fatal (exit 125),
// before anything runs, for a job the hook cannot reach (not Python, --no-instrument, python -I,
// another backend). to_request calls it for a run's knobs; a sweep for its loader axes too.
// `flag` names the flag in the error (--loader, --tf32).
void check_loader_reach(const RunFlags& flags, const engine::JobRequest& request,
                        const std::string& flag = "--loader");

std::unique_ptr<store::Store> open_store();
// For commands that only read (ps, show, logs, cost, sweeps, gpus, report, wait): the store,
// or where it cannot be opened for writing (a read-only file system or file) the store read
// as it is, with a note on stderr saying so.
std::unique_ptr<store::Store> open_store_to_read();
// engine::reconcile for those commands: skipped on a read-only store, and a store that cannot
// be written now (a full disk) is shown as last written, with a note, rather than not at all.
void reconcile_to_read(store::Store& store);
// --prices merged over the built-in catalog, or alone with --prices-only (or NODUS_PRICES_ONLY).
billing::Catalog load_catalog(const std::string& prices_flag, bool prices_only = false);
// Adds --prices and --prices-only.
void add_prices_flags(CLI::App* sub, std::string& prices, bool& prices_only);
// The local GPU inventory, needed only when a job asks for GPUs.
engine::Inventory local_inventory(const billing::Catalog& catalog);

void add_format_flag(CLI::App* sub, std::string& format);
Format format_from(const std::string& text);
void print(const std::string& text);  // stdout, all of it

std::string command_line(const std::vector<std::string>& argv);  // shell-quoted for display
std::string ago(double unix_time);                               // "3m ago"

}  // namespace nodus::cli
