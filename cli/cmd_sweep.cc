// nodus sweep: the same job once per cell of a parameter grid, packed onto free GPUs, with a
// per-sweep budget, then the comparison table.

#include <unistd.h>

#include <cstdio>

#include "cli/args.h"
#include "cli/common.h"
#include "cli/sweep_views.h"
#include "core/config.h"
#include "core/error.h"
#include "core/parse.h"
#include "engine/signals.h"
#include "engine/sweep_progress.h"
#include "engine/sweep_runner.h"
#include "sweep/cell_key.h"
#include "sweep/grid.h"
#include "sweep/placeholders.h"

namespace nodus::cli {
namespace {

struct SweepFlags {
  RunFlags run;
  std::vector<std::string> params;
  int parallel = 0;
  std::string budget;
  bool dry_run = false;
  bool yes = false;
  std::string resume;
  std::string sort;
  std::string format = "table";
};

// The flags that define what the cells run, as stored for --resume.
nlohmann::json definition_options(const SweepFlags& f, const engine::JobRequest& r) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : r.env) env[k] = redact_env_value(k, v);
  nlohmann::json o = {{"gpu", f.run.gpu},
                      {"max_cost", f.run.max_cost},
                      {"timeout", f.run.timeout},
                      {"grace", f.run.grace},
                      {"env", env},
                      {"workdir", r.workdir},
                      {"image", f.run.image},
                      {"backend", r.backend},
                      {"metric_regex", f.run.metric_regex},
                      {"throughput", f.run.throughput},
                      {"min_util", f.run.min_util},
                      {"util_window", f.run.util_window},
                      {"sample_interval", f.run.sample_interval}};
  // Only when not the default, so that sweeps defined before these flags keep their hash.
  if (!f.run.measure.empty()) o["measure"] = f.run.measure;
  if (f.run.warmup != "5s") o["warmup"] = f.run.warmup;
  if (f.run.no_instrument) o["no_instrument"] = true;
  if (f.run.cpus_per_gpu > 0) o["cpus_per_gpu"] = f.run.cpus_per_gpu;
  if (f.run.profile) o["profile"] = true;
  return o;
}

// Fills the flags of a sweep being resumed from its stored definition.
void restore_flags(SweepFlags& f, const store::SweepRecord& sweep) {
  const auto& d = sweep.definition;
  const auto& o = d.at("options");
  f.run.command = sweep.argv;
  f.params = d.at("params").get<std::vector<std::string>>();
  f.run.gpu = o.value("gpu", "none");
  f.run.max_cost = o.value("max_cost", "");
  f.run.timeout = o.value("timeout", "");
  f.run.grace = o.value("grace", "10s");
  f.run.workdir = o.value("workdir", "");
  f.run.image = o.value("image", "");
  f.run.backend = o.value("backend", "");
  f.run.metric_regex = o.value("metric_regex", std::vector<std::string>{});
  f.run.throughput = o.value("throughput", "samples_per_sec");
  f.run.min_util = o.value("min_util", "");
  f.run.util_window = o.value("util_window", "5m");
  f.run.sample_interval = o.value("sample_interval", "1s");
  f.run.measure = o.value("measure", "");
  f.run.warmup = o.value("warmup", "5s");
  f.run.no_instrument = o.value("no_instrument", false);
  f.run.cpus_per_gpu = o.value("cpus_per_gpu", 0);
  f.run.profile = o.value("profile", false);
  f.run.env.clear();
  // A named copy: items() of the temporary that value() returns would dangle.
  const nlohmann::json env = o.value("env", nlohmann::json::object());
  for (const auto& [k, v] : env.items()) {
    if (!v.is_string() || is_redacted(v.get<std::string>()))
      throw Fatal("--resume " + sweep_label(sweep) + ": it was started with a secret --env " + k +
                  " that nodus does not keep; repeat the sweep's command with --resume");
    f.run.env.push_back(k + "=" + v.get<std::string>());
  }
  if (f.parallel == 0) f.parallel = d.value("parallel", 0);
  if (f.budget.empty()) f.budget = d.value("budget", "");
}

int exit_for(const std::string& state) {
  if (state == "completed") return 0;
  if (state == "interrupted") return exit_code::kInterrupted;
  if (state == "budget") return exit_code::kCostCap;
  return 1;
}

struct SweepCommand {
  SweepFlags f;

  int operator()() {
    Format format = format_from(f.format);
    std::unique_ptr<store::Store> store;
    std::optional<store::SweepRecord> resumed;
    if (!f.resume.empty()) {
      store = open_store();
      resumed = store->find_sweep(f.resume);
      if (!resumed) throw Fatal("--resume: unknown sweep '" + f.resume + "': see nodus sweeps");
      if (f.run.command.empty()) restore_flags(f, *resumed);
    }
    if (f.params.empty())
      throw Fatal("--param: at least one NAME=VALUES is needed (e.g. --param num_workers=0,4,8)");
    engine::JobRequest request = to_request(f.run);
    sweep::Grid grid = value_or_throw(sweep::parse_grid(f.params));
    value_or_throw(sweep::check_cell_count(grid, f.yes));
    auto tmpl = value_or_throw(sweep::ArgvTemplate::parse(request.argv, grid));
    std::optional<double> budget;
    if (!f.budget.empty()) budget = value_or_throw(parse_usd(f.budget, "--budget"));
    if (budget && request.gpu.none())
      throw Fatal("--budget " + format_usd(*budget) +
                  ": CPU-only cells have no catalog rate; add --gpu TYPE[:COUNT]");
    if (f.parallel < 0)
      throw Fatal("--parallel: invalid value '" + std::to_string(f.parallel) +
                  "': expected 1 or more");

    billing::Catalog catalog = load_catalog(f.run.prices, f.run.prices_only);
    std::optional<engine::Inventory> inventory;
    if (request.backend == "local" && !request.gpu.none()) inventory = local_inventory(catalog);
    JobRecord base = engine::build_job(request, catalog, inventory ? &*inventory : nullptr);

    nlohmann::json options = definition_options(f, request);
    std::string hash = sweep::definition_hash(tmpl.source(), grid, options);
    if (resumed && resumed->definition_hash != hash)
      throw Fatal(
          "--resume " + sweep_label(*resumed) +
          ": the sweep's definition changed (command, params, GPUs, caps or env differ from "
          "when it was started); start a new sweep instead");

    std::vector<engine::PlannedCell> cells;
    for (const auto& cell : sweep::expand(grid)) {
      engine::PlannedCell p;
      p.index = cell.index;
      p.label = sweep::cell_label(cell.params);
      p.job = base;
      p.job.argv = tmpl.resolve(cell);
      p.job.params = sweep::params_json(cell.params);
      p.job.cell_index = cell.index;
      p.env = request.env;
      for (const auto& [k, v] : sweep::cell_env(cell)) p.env[k] = v;
      p.job.env = p.env;
      p.job.cell_key =
          sweep::cell_key({p.job.argv, p.env, request.gpu, request.max_cost, p.job.timeout_ms});
      cells.push_back(std::move(p));
    }
    int parallel = f.parallel > 0
                       ? f.parallel
                       : engine::default_parallel(base, inventory ? &*inventory : nullptr);
    auto worst = engine::worst_case_cost(base.gpu_count, base.rate_per_gpu_hour, base.max_cost,
                                         base.timeout_ms, base.grace_ms);
    std::string worst_text = worst ? format_usd(*worst * cells.size()) + " (" +
                                         std::to_string(cells.size()) + " x " + format_usd(*worst) +
                                         ")"
                                   : "unbounded (no --max-cost or --timeout)";
    std::fprintf(stderr, "nodus: sweep of %zu cells, up to %d at once, worst case %s%s\n",
                 cells.size(), std::min<int>(parallel, static_cast<int>(cells.size())),
                 worst_text.c_str(), budget ? (", budget " + format_usd(*budget)).c_str() : "");
    if (budget && !worst)
      std::fprintf(stderr,
                   "nodus: cells have no --max-cost or --timeout: with --budget each runs alone, "
                   "capped at what is left\n");
    if (f.dry_run) return print_plan(cells, grid, format), 0;

    if (!store) store = open_store();
    store->reconcile_dead_supervisors();
    store::SweepRecord sweep;
    if (resumed) {
      sweep = *resumed;
      for (const auto& done : store->sweep_cells(sweep.id)) {
        if (done.state != JobState::kCompleted || done.cell_index < 0 ||
            done.cell_index >= static_cast<int>(cells.size()))
          continue;
        auto& c = cells[done.cell_index];
        if (c.job.cell_key == done.cell_key) {
          c.done = true;
          c.job = done;
        }
      }
    } else {
      sweep.name = f.run.name;
      sweep.backend = request.backend;
      sweep.argv = request.argv;
      sweep.definition = {{"params", f.params},
                          {"options", options},
                          {"parallel", f.parallel},
                          {"budget", f.budget},
                          {"cells", cells.size()}};
      sweep.definition_hash = hash;
      sweep.budget = budget;
      sweep.created_at = unix_now();
    }
    sweep.state = "running";
    sweep.ended_at.reset();
    sweep.supervisor_pid = getpid();
    sweep.supervisor_start = store::process_start_time(sweep.supervisor_pid);
    if (resumed)
      store->update_sweep(sweep);
    else
      sweep.id = store->insert_sweep(sweep);
    for (auto& c : cells)
      if (!c.done)
        c.job.name = (sweep.name.empty() ? "s" + std::to_string(sweep.id) : sweep.name) + "-" +
                     std::to_string(c.index + 1);

    engine::SignalWatch signals;
    engine::SweepProgress progress(sweep_label(sweep), is_tty(2) && !std::getenv("CI"),
                                   use_color(2));
    engine::SweepRunner runner(*store, signals, progress);
    engine::SweepSettings settings{parallel, budget, inventory ? &*inventory : nullptr};
    std::string state = runner.run(sweep, cells, settings);
    sweep.state = state;
    sweep.ended_at = unix_now();
    store->update_sweep(sweep);
    print_sweep(*store, sweep, f.sort, format);
    if (state != "completed")
      std::fprintf(stderr,
                   "nodus: sweep %s ended %s; `nodus sweep --resume %s` reruns the cells that did "
                   "not complete\n",
                   sweep_label(sweep).c_str(), state.c_str(),
                   ("s" + std::to_string(sweep.id)).c_str());
    return exit_for(state);
  }

  void print_plan(const std::vector<engine::PlannedCell>& cells, const sweep::Grid& grid,
                  Format format) const {
    std::vector<Column> cols = {{"cell", "CELL", true}};
    for (const auto& axis : grid.axes) cols.push_back({axis.name, axis.name});
    cols.push_back({"command", "COMMAND"});
    Table t(cols);
    for (const auto& c : cells) {
      std::vector<std::string> text = {std::to_string(c.index + 1)};
      nlohmann::json raw = {{"cell", c.index + 1}, {"command", c.job.argv}};
      for (const auto& [k, v] : c.job.params.items()) {
        std::string s = v.is_string() ? v.get<std::string>() : v.dump();
        text.push_back(s);
        raw[k] = v;
      }
      text.push_back(command_line(c.job.argv));
      t.add_row(text, raw);
    }
    print(t.render(format));
  }
};

}  // namespace

Command add_sweep(CLI::App& app) {
  auto cmd = std::make_shared<SweepCommand>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "run a job once per cell of a parameter grid ({NAME} in CMD is the cell's value)");
  takes_command(sub);
  set_examples(sub,
               {"nodus sweep --gpu H100 --max-cost 2 --budget 20 -p num_workers=0,4,8 -- python "
                "train.py --workers {num_workers}",
                "nodus sweep -p bs=64..1024:x2 -p lr=1e-4,3e-4 --dry-run -- python train.py "
                "--bs {bs} --lr {lr}",
                "nodus sweep --resume s3"});
  add_run_flags(sub, cmd->f.run);
  sub->add_option("-p,--param", cmd->f.params,
                  "NAME=VALUES: 4,8,16 | 1..8 | 1..16:4 | 64..1024:x2 (repeatable)")
      ->type_name("NAME=VALUES")
      ->check(param_value());
  sub->add_option("--parallel", cmd->f.parallel,
                  "at most N cells at once (default: as many as the free GPUs allow)")
      ->type_name("N")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--budget", cmd->f.budget, "cap on the whole sweep's cost")
      ->type_name("USD")
      ->check(usd_value());
  sub->add_flag("--dry-run", cmd->f.dry_run,
                "print the cells and the worst-case cost; run nothing");
  sub->add_flag("-y,--yes", cmd->f.yes, "confirm a sweep of more than 1000 cells");
  sub->add_option("--resume", cmd->f.resume, "rerun the cells of SWEEP that did not complete")
      ->type_name("SWEEP");
  sub->add_option("--sort", cmd->f.sort, "sort the table by this column")->type_name("COLUMN");
  add_format_flag(sub, cmd->f.format);
  return {sub, [cmd] {
            auto rest = job_command();
            if (!rest.empty()) cmd->f.run.command = rest;
            return (*cmd)();
          }};
}

}  // namespace nodus::cli
