// nodus sweep: the same job once per cell of a parameter grid, packed onto free GPUs, with a
// per-sweep budget, then the comparison table.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>

#include "billing/stop_plan.h"
#include "cli/args.h"
#include "cli/common.h"
#include "cli/spec_file.h"
#include "cli/sweep_command.h"
#include "cli/sweep_views.h"
#include "core/config.h"
#include "core/error.h"
#include "core/files.h"
#include "core/parse.h"
#include "core/secret.h"
#include "core/strings.h"
#include "engine/reconcile.h"
#include "engine/stop_controller.h"
#include "engine/supervisor_process.h"
#include "engine/sweep_plan.h"
#include "engine/sweep_runner.h"
#include "engine/sweep_session.h"
#include "sweep/cell_key.h"
#include "sweep/compare.h"
#include "sweep/grid.h"
#include "sweep/placeholders.h"
#include "telemetry/phases.h"
#include "telemetry/pyhook.h"

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
  bool detach = false;
  uint64_t sample = 0;  // 0: every cell
  uint64_t seed = 1;
  int repeat = 1;
  std::string objective;                 // "" : throughput:max
  std::optional<double> stop_early;      // --stop-early FACTOR
  std::string file;                      // -f sweep.yaml
  std::string save;                      // --save sweep.yaml
  std::vector<std::string> loader_axes;  // knobs of --loader with several values: grid axes
};

// --loader in a sweep: KNOB=V1,V2,... is an axis of the grid, as --param's are, whose value the
// hook sets in each cell's DataLoader; KNOB=VALUE (or several joined: num_workers=8,pin_memory=
// true) sets it in every cell. A part without '=' is one more value of the knob before it. The
// axes move to f.params and f.loader_axes; what is left stays in f.run.loader.
void split_loader_axes(SweepFlags& f) {
  std::vector<std::string> fixed;
  for (const std::string& flag : f.run.loader) {
    std::vector<std::pair<std::string, std::vector<std::string>>> knobs;
    for (size_t begin = 0;;) {
      size_t end = flag.find(',', begin);
      std::string part = flag.substr(begin, end == std::string::npos ? end : end - begin);
      auto eq = part.find('=');
      if (eq != std::string::npos)
        knobs.push_back({part.substr(0, eq), {part.substr(eq + 1)}});
      else if (!knobs.empty())
        knobs.back().second.push_back(part);
      else
        knobs.push_back({part, {}});  // no '=': parse_loader_knobs says what is wrong
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    for (const auto& [knob, values] : knobs) {
      if (values.size() < 2) {
        fixed.push_back(values.empty() ? knob : knob + "=" + values.front());
        continue;
      }
      for (const std::string& v : values)
        (void)value_or_throw(telemetry::parse_loader_knobs({knob + "=" + v}));
      if (std::find(f.loader_axes.begin(), f.loader_axes.end(), knob) != f.loader_axes.end())
        throw Fatal("--loader: " + knob + " is given twice (one axis per knob)");
      f.params.push_back(knob + "=" + join(values, ","));
      f.loader_axes.push_back(knob);
    }
  }
  for (const std::string& knob : fixed)
    if (std::find(f.loader_axes.begin(), f.loader_axes.end(), knob.substr(0, knob.find('='))) !=
        f.loader_axes.end())
      throw Fatal("--loader: " + knob.substr(0, knob.find('=')) +
                  " is given twice (an axis and a value for every cell)");
  f.run.loader = fixed;
}

// The sweep-only fields as a spec file sees them, and back.
SweepSpec spec_of(const SweepFlags& f) {
  SweepSpec s;
  s.params = f.params;
  s.budget = f.budget;
  if (f.parallel > 0) s.parallel = f.parallel;
  s.repeat = f.repeat;
  if (f.sample > 0) s.sample = f.sample, s.seed = f.seed;
  s.objective = f.objective;
  return s;
}
void take_spec(SweepFlags& f, const SweepSpec& s) {
  f.params = s.params;
  f.budget = s.budget;
  if (s.parallel) f.parallel = *s.parallel;
  if (s.repeat) f.repeat = *s.repeat;
  if (s.sample) f.sample = *s.sample;
  if (s.seed) f.seed = *s.seed;
  f.objective = s.objective;
}

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
  if (!f.run.loader.empty()) o["loader"] = f.run.loader;
  if (f.run.tf32) o["tf32"] = true;
  if (!f.loader_axes.empty()) o["loader_axes"] = f.loader_axes;
  if (f.run.log_limit != "1G") o["log_limit"] = f.run.log_limit;
  return o;
}

// What prices the cells (--rate, --rate-per, --prices, --prices-only), as the submit carries it
// to a detached sweep's supervisor and the definition keeps it for --resume: not part of the
// definition's hash (a price is not what the cells run). A --prices file is made absolute;
// `stored`: a --prices URL's credentials redacted, as everything the store keeps.
std::map<std::string, std::string> pricing_of(const RunFlags& f, bool stored) {
  std::string prices = f.prices;
  if (!prices.empty() && prices.find("://") == std::string::npos) {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(prices, ec);
    if (!ec) prices = absolute.string();
  }
  return {{"rate", f.rate},
          {"rate_per", f.rate_per},
          {"prices", stored ? redact_urls(prices) : prices},
          {"prices_only", f.prices_only ? "1" : "0"}};
}

// The flags of pricing_of back into `f`, where the command line did not give them (--resume s3
// --rate 40 reprices the rest of the sweep).
void take_pricing(RunFlags& f, const std::map<std::string, std::string>& pricing) {
  auto get = [&](const char* key, const std::string& fallback) {
    auto it = pricing.find(key);
    return it == pricing.end() ? fallback : it->second;
  };
  if (f.rate.empty()) {
    f.rate = get("rate", "");
    f.rate_per = get("rate_per", "gpu");
  }
  if (f.prices.empty() && !f.prices_only) {
    f.prices = get("prices", "");
    f.prices_only = get("prices_only", "0") == "1";
  }
}

// Fills the flags of a sweep being resumed from its stored definition.
// `env`: the unredacted --env a detached sweep's supervisor got in its ticket (nullptr: from
// the stored definition, which refuses secrets it did not keep).
// `pricing`: the detached sweep's pricing from its ticket (nullptr: from the definition).
void restore_flags(SweepFlags& f, const store::SweepRecord& sweep,
                   const std::map<std::string, std::string>* env_override = nullptr,
                   const std::map<std::string, std::string>* pricing = nullptr) {
  const auto& d = *sweep.definition;
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
  f.run.loader = o.value("loader", std::vector<std::string>{});
  f.run.tf32 = o.value("tf32", false);
  f.loader_axes = o.value("loader_axes", std::vector<std::string>{});
  f.run.log_limit = o.value("log_limit", "1G");
  f.run.env.clear();
  f.sample = d.value("sample", uint64_t{0});
  f.seed = d.value("seed", uint64_t{1});
  f.repeat = d.value("repeat", 1);
  if (f.objective.empty()) f.objective = d.value("objective", "");
  if (!f.stop_early && d.contains("stop_early")) f.stop_early = d["stop_early"].get<double>();
  // Sweeps stored before the definition kept their pricing have none: the catalog prices them.
  const auto stored_pricing =
      d.value("pricing", nlohmann::json::object()).get<std::map<std::string, std::string>>();
  if (pricing && !pricing->empty()) {
    take_pricing(f.run, *pricing);
  } else {
    if (f.run.prices.empty() &&
        is_redacted(stored_pricing.count("prices") ? stored_pricing.at("prices") : ""))
      throw Fatal("--resume " + sweep_label(sweep) +
                  ": its --prices URL held a credential that nodus does not keep; repeat the "
                  "sweep's command with --resume");
    take_pricing(f.run, stored_pricing);
  }
  if (env_override) {
    for (const auto& [k, v] : *env_override) f.run.env.push_back(k + "=" + v);
    if (f.parallel == 0) f.parallel = d.value("parallel", 0);
    if (f.budget.empty()) f.budget = d.value("budget", "");
    return;
  }
  for (const auto& arg : sweep.argv)
    if (is_redacted(arg))
      throw Fatal("--resume " + sweep_label(sweep) +
                  ": its command held a credential that nodus does not keep; repeat the sweep's "
                  "command with --resume");
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

// The flags restore_flags takes from a resumed sweep's definition, each as it reads in
// SweepFlags. Given to `--resume SWEEP` without a command, a value other than the sweep's would
// be replaced without a word (a new --max-cost dropped, the cells run uncapped as before), so
// refuse_changes refuses it instead.
struct DefinitionFlag {
  const char* option;  // its name as CLI11 knows it
  std::string (*value)(const SweepFlags&);
  bool secret = false;  // its value may hold a secret: not echoed
};

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += v + "\n";
  return out;
}

const DefinitionFlag kDefinitionFlags[] = {
    {"--param", [](const SweepFlags& f) { return joined(f.params); }},
    {"--gpu", [](const SweepFlags& f) { return f.run.gpu; }},
    {"--max-cost", [](const SweepFlags& f) { return f.run.max_cost; }},
    {"--timeout", [](const SweepFlags& f) { return f.run.timeout; }},
    {"--grace", [](const SweepFlags& f) { return f.run.grace; }},
    {"--env",
     [](const SweepFlags& f) {
       auto env = f.run.env;
       std::sort(env.begin(), env.end());
       return joined(env);
     },
     true},
    {"--workdir",
     [](const SweepFlags& f) {
       if (f.run.workdir.empty()) return std::string();
       std::error_code ec;
       auto dir = std::filesystem::weakly_canonical(std::filesystem::absolute(f.run.workdir), ec);
       return ec ? f.run.workdir : dir.string();
     }},
    {"--image", [](const SweepFlags& f) { return f.run.image; }},
    {"--backend", [](const SweepFlags& f) { return f.run.backend; }},
    {"--metric-regex", [](const SweepFlags& f) { return joined(f.run.metric_regex); }},
    {"--throughput", [](const SweepFlags& f) { return f.run.throughput; }},
    {"--min-util", [](const SweepFlags& f) { return f.run.min_util; }},
    {"--util-window", [](const SweepFlags& f) { return f.run.util_window; }},
    {"--sample-interval", [](const SweepFlags& f) { return f.run.sample_interval; }},
    {"--measure", [](const SweepFlags& f) { return f.run.measure; }},
    {"--warmup", [](const SweepFlags& f) { return f.run.warmup; }},
    {"--no-instrument",
     [](const SweepFlags& f) { return std::string(f.run.no_instrument ? "on" : "off"); }},
    {"--cpus-per-gpu", [](const SweepFlags& f) { return std::to_string(f.run.cpus_per_gpu); }},
    {"--profile", [](const SweepFlags& f) { return std::string(f.run.profile ? "on" : "off"); }},
    {"--loader", [](const SweepFlags& f) { return joined(f.run.loader); }},
    {"--tf32", [](const SweepFlags& f) { return std::string(f.run.tf32 ? "on" : "off"); }},
    {"--log-limit", [](const SweepFlags& f) { return f.run.log_limit; }},
    {"--sample", [](const SweepFlags& f) { return std::to_string(f.sample); }},
    {"--seed", [](const SweepFlags& f) { return std::to_string(f.seed); }},
    {"--repeat", [](const SweepFlags& f) { return std::to_string(f.repeat); }},
};

// Which of `names` were given on the command line (CLI11 counted them).
std::vector<std::string> given_options(CLI::App& sub, std::span<const char* const> names) {
  std::vector<std::string> out;
  for (const char* name : names)
    if (const CLI::Option* o = sub.get_option_no_throw(name); o && o->count() > 0)
      out.push_back(name);
  return out;
}

// The flags a spec file has no key for (sweep_spec_yaml writes none of them): --save refuses
// them rather than write a file that runs without them.
constexpr const char* kUnsaveableFlags[] = {
    "--rate",        "--rate-per",     "--prices",         "--prices-only", "--min-util",
    "--util-window", "--stop-early",   "--measure",        "--profile",     "--no-instrument",
    "--no-wait",     "--cpus-per-gpu", "--sample-interval"};

// `typed`: the flags as given; `restored`: after restore_flags. A given flag whose value is not
// the sweep's is refused (exit 125): a resumed sweep runs its cells as they were defined.
void refuse_changes(const SweepFlags& typed, const SweepFlags& restored,
                    const std::vector<std::string>& given, const store::SweepRecord& sweep) {
  for (const DefinitionFlag& flag : kDefinitionFlags) {
    if (std::find(given.begin(), given.end(), flag.option) == given.end()) continue;
    const std::string mine = flag.value(typed), theirs = flag.value(restored);
    if (mine == theirs) continue;
    auto shown = [](std::string v) {
      while (!v.empty() && v.back() == '\n') v.pop_back();
      std::replace(v.begin(), v.end(), '\n', ' ');
      return v.empty() ? std::string("none") : "'" + redact_value(v) + "'";
    };
    const std::string what = flag.secret ? std::string(flag.option) + " differs from the sweep's"
                                         : std::string(flag.option) + " " + shown(mine) +
                                               " is not the sweep's (" + shown(theirs) + ")";
    throw Fatal("--resume " + sweep_label(sweep) + ": " + what +
                "; a resumed sweep runs its cells as they were defined: leave " + flag.option +
                " out, or start a new sweep");
  }
}

// A sweep ready to run: its cells and what the runner needs.
struct Plan {
  engine::JobRequest request;
  sweep::Grid grid;
  std::optional<sweep::ArgvTemplate> tmpl;
  std::vector<engine::PlannedCell> cells;
  std::optional<double> budget;
  std::optional<engine::Inventory> inventory;
  nlohmann::json options;
  std::string hash;
  int parallel = 1;
  sweep::Objective objective;
};

struct SweepCommand {
  SweepFlags f;
  std::vector<std::string> given;       // the definition flags on the command line
  bool budget_given = false;            // --budget on the command line
  std::vector<std::string> unsaveable;  // given flags a spec file has no key for (--save)

  // --gpu with placeholders (H100:{gpus}): each cell's GPUs are its value of the template.
  bool gpu_per_cell() const { return f.run.gpu.find_first_of("{}") != std::string::npos; }

  // An error about one value of a --gpu with placeholders, said of the cells that take it:
  // "--gpu H100:{g} is 'H100:8' for some cells: more than this machine has: ...".
  Fatal for_cells_with(const std::string& value, const Fatal& e) const {
    std::string why = e.what();
    for (const std::string& prefix : {std::string("--gpu: "), "--gpu " + value + ": "})
      if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    return Fatal("--gpu " + f.run.gpu + " is '" + value + "' for some cells: " + why, e.code());
  }

  // Parses and checks everything, and plans the cells; runs and stores nothing.
  Plan plan() {
    Plan p;
    split_loader_axes(f);
    if (f.params.empty())
      throw Fatal(
          "--param: at least one NAME=VALUES is needed (e.g. --param lr=0.1,0.01, or --loader "
          "num_workers=0,4,8)");
    if (f.repeat < 1)
      throw Fatal("--repeat: invalid value '" + std::to_string(f.repeat) + "': expected 1 or more");
    p.objective = value_or_throw(sweep::parse_objective(f.objective));
    if (f.stop_early) {
      if (!(*f.stop_early > 1) || !std::isfinite(*f.stop_early))
        throw Fatal("--stop-early: invalid value '" + std::to_string(*f.stop_early) +
                    "': expected a factor above 1 (2: stop cells costing twice the best per "
                    "sample)");
      if (p.objective.name != "throughput" && p.objective.name != "cost_per_msample")
        throw Fatal(
            "--stop-early compares steady cost per sample; it works with --objective "
            "throughput or cost_per_msample, not " +
            p.objective.text());
    }
    p.grid = value_or_throw(sweep::parse_grid(f.params));
    value_or_throw(sweep::check_no_credentials(p.grid));  // before anything prints or stores one
    std::optional<sweep::ArgvTemplate> gpu_template;
    if (gpu_per_cell())
      gpu_template = value_or_throw(sweep::ArgvTemplate::parse({f.run.gpu}, p.grid, "--gpu"));
    std::vector<int> indices;
    if (f.sample > 0) {
      value_or_throw(sweep::check_sample(p.grid, f.sample, f.yes));
      indices = sweep::sample_cells(p.grid, f.sample, f.seed);
    } else {
      value_or_throw(sweep::check_cell_count(p.grid, f.yes));
    }
    const uint64_t grid_cells = sweep::cell_count(p.grid);
    const uint64_t runs = (indices.empty() ? grid_cells : indices.size()) * f.repeat;
    if (grid_cells * static_cast<uint64_t>(f.repeat) > static_cast<uint64_t>(INT32_MAX) ||
        runs > sweep::kMaxCells)
      throw Fatal("--repeat " + std::to_string(f.repeat) + ": " + std::to_string(runs) +
                  " runs; at most " + std::to_string(sweep::kMaxCells) + " are allowed");
    // One request for each --gpu value the cells take (the only one, without placeholders).
    std::vector<std::pair<std::string, engine::JobRequest>> requests;
    if (gpu_template) {
      for (const auto& value : engine::cell_gpu_values(*gpu_template, p.grid, indices)) {
        RunFlags run = f.run;
        run.gpu = value;
        try {
          requests.emplace_back(value, to_request(run));
        } catch (const Fatal& e) {
          throw for_cells_with(value, e);
        }
      }
    } else {
      requests.emplace_back(f.run.gpu, to_request(f.run));
    }
    p.request = requests.front().second;
    if (!f.loader_axes.empty()) check_loader_reach(f.run, p.request);
    p.tmpl = value_or_throw(sweep::ArgvTemplate::parse(p.request.argv, p.grid));
    if (!f.budget.empty()) p.budget = value_or_throw(parse_usd(f.budget, "--budget"));
    const bool any_gpu = std::any_of(requests.begin(), requests.end(),
                                     [](const auto& r) { return !r.second.gpu.none(); });
    if (f.parallel < 0)
      throw Fatal("--parallel: invalid value '" + std::to_string(f.parallel) +
                  "': expected 1 or more");

    billing::Catalog catalog = load_catalog(f.run.prices, f.run.prices_only);
    if (p.request.backend == "local" && any_gpu) p.inventory = local_inventory(catalog);
    const engine::Inventory* inv = p.inventory ? &*p.inventory : nullptr;
    // Each --gpu value's job, built once; the first value's is the sweep's base.
    std::map<std::string, engine::SweepPlanInput::GpuBase> gpu_bases;
    if (gpu_template) {
      for (const auto& [value, request] : requests) {
        try {
          gpu_bases[value] = {engine::build_job(request, catalog, inv), request.gpu};
        } catch (const Fatal& e) {
          throw for_cells_with(value, e);
        }
      }
    }
    JobRecord base = gpu_template ? gpu_bases.at(requests.front().first).job
                                  : engine::build_job(p.request, catalog, inv);

    p.options = definition_options(f, p.request);
    // Only when set, so that sweeps defined before these flags keep their hash.
    if (f.sample > 0) p.options["sample"] = {{"n", f.sample}, {"seed", f.seed}};
    if (f.repeat > 1) p.options["repeat"] = f.repeat;
    p.hash = sweep::definition_hash(p.tmpl->source(), p.grid, p.options);

    engine::SweepPlanInput in;
    in.base = base;
    in.env = p.request.env;
    in.gpu = p.request.gpu;
    in.max_cost = p.request.max_cost;
    in.indices = indices;
    in.repeat = f.repeat;
    in.loader_axes = f.loader_axes;
    // The default --parallel: as many cells as the free GPUs allow, counting the cells that ask
    // for the fewest (the GPU claims hold back the others).
    int parallel = engine::default_parallel(base, inv);
    for (const auto& [value, b] : gpu_bases)
      parallel = std::max(parallel, engine::default_parallel(b.job, inv));
    in.gpu_template = gpu_template;
    in.gpu_bases = std::move(gpu_bases);
    p.cells = engine::plan_cells(in, p.grid, *p.tmpl);
    // A budget is kept by what the cells cost: a cell without GPUs costs nothing unless the
    // machine has a rate (--rate, NODUS_LOCAL_USD_PER_HOUR).
    if (p.budget && std::any_of(p.cells.begin(), p.cells.end(), [](const engine::PlannedCell& c) {
          return c.job.gpu_count == 0 && !(c.job.rate_per_gpu_hour > 0);
        }))
      throw Fatal("--budget " + format_usd(*p.budget) +
                  ": cells without GPUs are billed at no rate here; add --gpu TYPE[:COUNT], or "
                  "give the machine's rate (--rate USD_PER_HOUR or NODUS_LOCAL_USD_PER_HOUR)");
    p.parallel = f.parallel > 0 ? f.parallel : parallel;
    return p;
  }

  void announce(const Plan& p) const {
    // The worst case of every cell (cells differ when --gpu takes a param's value).
    std::optional<double> total = 0.0, most = 0.0, least;
    for (const auto& c : p.cells) {
      auto worst = engine::worst_case_cost(c.job.gpu_count, c.job.rate_per_gpu_hour, c.job.max_cost,
                                           c.job.timeout_ms, c.job.grace_ms);
      if (!worst) {
        total = std::nullopt;
        break;
      }
      *total += *worst;
      most = std::max(*most, *worst);
      least = std::min(least.value_or(*worst), *worst);
    }
    size_t n = p.cells.size();
    std::string worst_text =
        !total ? "unbounded (no --max-cost or --timeout)"
        : *least == *most
            ? format_usd(*total) + " (" + std::to_string(n) + " x " + format_usd(*most) + ")"
            : format_usd(*total) + " (" + std::to_string(n) + " cells, " + format_usd(*least) +
                  " to " + format_usd(*most) + " each)";
    std::string runs = f.repeat > 1 ? " (" + std::to_string(n / f.repeat) + " cells x " +
                                          std::to_string(f.repeat) + " repeats)"
                                    : "";
    std::fprintf(stderr, "nodus: sweep of %zu %s%s, up to %d at once, worst case %s%s\n", n,
                 f.repeat > 1 ? "runs" : "cells", runs.c_str(),
                 std::min<int>(p.parallel, static_cast<int>(n)), worst_text.c_str(),
                 p.budget ? (", budget " + format_usd(*p.budget)).c_str() : "");
    if (p.budget && !total)
      std::fprintf(stderr,
                   "nodus: cells have no --max-cost or --timeout: with --budget each runs alone, "
                   "capped at what is left\n");
    // As `run` warns: a cell whose cap (or share of the budget, when the first cells start
    // together) buys less than the grace period gets its SIGTERM the moment it starts. Once
    // for each --gpu value the cells take.
    std::optional<double> share;
    if (p.budget) share = *p.budget / std::max<size_t>(1, std::min<size_t>(p.parallel, n));
    std::set<std::string> warned;
    for (const auto& c : p.cells) {
      const std::string gpus = gpu_flag_value(c.job);
      if (!warned.insert(gpus).second) continue;
      if (auto warning = engine::plan_warning(
              billing::plan_stop(c.job, share), std::chrono::milliseconds(c.job.grace_ms),
              c.job.timeout_ms ? std::optional(std::chrono::milliseconds(*c.job.timeout_ms))
                               : std::nullopt))
        std::fprintf(stderr, "nodus: each cell%s: %s\n",
                     gpu_per_cell() ? (" with --gpu " + gpus).c_str() : "", warning->c_str());
    }
  }

  nlohmann::json definition(const Plan& p) const {
    nlohmann::json d = {{"params", f.params},      {"options", p.options},
                        {"parallel", f.parallel},  {"budget", f.budget},
                        {"cells", p.cells.size()}, {"pricing", pricing_of(f.run, /*stored=*/true)}};
    if (f.sample > 0) d["sample"] = f.sample, d["seed"] = f.seed;
    if (f.repeat > 1) d["repeat"] = f.repeat;
    if (!f.objective.empty()) d["objective"] = p.objective.text();
    if (f.stop_early) d["stop_early"] = *f.stop_early;
    return d;
  }

  int operator()() {
    Format format = format_from(f.format);
    std::unique_ptr<store::Store> store;
    std::optional<store::SweepRecord> resumed;
    if (!f.resume.empty()) {
      store = open_store();
      resumed = engine::resumable_sweep(*store, f.resume);
      if (f.run.command.empty()) {
        const SweepFlags typed = f;
        restore_flags(f, *resumed);
        refuse_changes(typed, f, given, *resumed);
      }
    }
    Plan p = plan();
    if (resumed && resumed->definition_hash != p.hash)
      throw Fatal(
          "--resume " + sweep_label(*resumed) +
          ": the sweep's definition changed (command, params, GPUs, caps or env differ from "
          "when it was started); start a new sweep instead");
    if (!f.save.empty()) return save(p), 0;
    announce(p);
    if (f.dry_run) return print_plan(p, format), 0;

    if (!store) store = open_store();
    engine::reconcile(*store);
    store::SweepRecord sweep;
    if (resumed) {
      sweep = *resumed;
      // --resume s3 --budget 20: the sweep's budget from now on, as the store and every listing
      // say it (and a later --resume takes it).
      if (budget_given && p.budget != sweep.budget) {
        sweep.budget = p.budget;
        (*sweep.definition)["budget"] = f.budget;
      }
      engine::mark_done(p.cells, store->sweep_cells(sweep.id));
    } else {
      sweep.name = f.run.name;
      sweep.backend = p.request.backend;
      sweep.argv = p.request.argv;
      sweep.definition = definition(p);
      sweep.definition_hash = p.hash;
      sweep.budget = p.budget;
      sweep.created_at = unix_now();
    }
    if (f.detach) return detach(*store, sweep, p);
    std::string state =
        engine::run_sweep(*store, sweep, p.cells, settings(p), is_tty(2) && !std::getenv("CI"));
    print_sweep(*store, sweep, {f.sort, f.objective, {}}, format);
    if (state != "completed")
      std::fprintf(stderr,
                   "nodus: sweep %s ended %s; `nodus sweep --resume %s` reruns the cells that did "
                   "not complete\n",
                   sweep_label(sweep).c_str(), state.c_str(),
                   ("s" + std::to_string(sweep.id)).c_str());
    return engine::sweep_exit_code(state);
  }

  // --save FILE: the spec file this command line means (checked: it planned), nothing run.
  void save(const Plan& p) const {
    // A flag the spec format has no key for would be left out, and the file would run (and
    // bill) something else than this command line: refused instead.
    if (!unsaveable.empty())
      throw Fatal("--save " + f.save + ": " + unsaveable.front() +
                  " has no key in a spec file, so the file would run without it; leave it out, "
                  "or run the sweep without --save");
    for (const auto& kv : f.run.env) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos && env_reference(kv.substr(eq + 1)))
        throw Fatal("--save " + f.save + ": -e " + kv.substr(0, eq) + "'s value '" +
                    kv.substr(eq + 1) +
                    "' would read as a reference to that variable in the file; nodus cannot "
                    "write it as it is");
    }
    std::error_code same_ec;
    if (!f.file.empty() && std::filesystem::equivalent(f.save, f.file, same_ec))
      throw Fatal("--save " + f.save + ": it is the spec file this sweep was read from (-f)");
    // A redacted argument would not run as typed, and the real one is not written to a file.
    const auto shown = redact_argv(f.run.command);
    for (size_t i = 0; i < shown.size(); ++i)
      if (shown[i] != f.run.command[i])
        throw Fatal("--save " + f.save + ": the command's argument " + std::to_string(i + 1) +
                    " ('" + shown[i] +
                    "') holds a credential, which nodus never writes to a file; pass it to the "
                    "job in a -e variable instead");
    // Loader axes as typed (loader: [num_workers=0,4,8]), not as the --param axes they became.
    RunFlags run = f.run;
    SweepSpec spec = spec_of(f);
    std::erase_if(spec.params, [&](const std::string& param) {
      const std::string name = param.substr(0, param.find('='));
      if (std::find(f.loader_axes.begin(), f.loader_axes.end(), name) == f.loader_axes.end())
        return false;
      run.loader.push_back(param);
      return true;
    });
    std::string yaml = sweep_spec_yaml(run, spec);
    // 0600: the file names the variables its secrets come from, and is nobody else's to read.
    int fd = value_or_throw(create_new_file(f.save, 0600));
    size_t done = 0;
    while (done < yaml.size()) {
      ssize_t w = write(fd, yaml.data() + done, yaml.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        close(fd);
        throw Fatal("--save " + f.save + ": cannot write: " + std::strerror(errno));
      }
      done += static_cast<size_t>(w);
    }
    close(fd);
    for (const auto& kv : f.run.env) {
      auto eq = kv.find('=');
      std::string name = kv.substr(0, eq);
      if (env_needs_reference(name, eq == std::string::npos ? "" : kv.substr(eq + 1)))
        std::fprintf(stderr,
                     "nodus: --save wrote -e %s as ${%s} (a secret): export %s when you run "
                     "the file\n",
                     name.c_str(), name.c_str(), name.c_str());
    }
    std::fprintf(stderr, "nodus: wrote %s (%zu %s); run it with nodus sweep -f %s\n",
                 f.save.c_str(), p.cells.size(), p.cells.size() == 1 ? "run" : "runs",
                 f.save.c_str());
  }

  // What the runner needs beyond the cells.
  engine::SweepSettings settings(const Plan& p) const {
    engine::SweepSettings settings;
    settings.parallel = p.parallel;
    settings.budget = p.budget;
    settings.inventory = p.inventory ? &*p.inventory : nullptr;
    settings.stop_early = f.stop_early;
    settings.throughput_metric = f.run.throughput;
    if (auto w = telemetry::parse_warmup(f.run.warmup)) settings.warmup_s = w->seconds.value_or(0);
    return settings;
  }

  // `sweep -d`: the sweep's row is written here, its supervisor (`nodus __supervise`, in a
  // session of its own, the same process a detached `run` uses) plans and runs it.
  int detach(store::Store& store, store::SweepRecord& sweep, const Plan& p) {
    engine::Ticket ticket;
    ticket.env = p.request.env;
    ticket.argv = p.request.argv;  // the store keeps the template redacted
    ticket.pricing = pricing_of(f.run, /*stored=*/false);
    if (p.inventory) ticket.inventory = *p.inventory;
    engine::detach_sweep(store, sweep, ticket);
    std::printf("s%lld\n", static_cast<long long>(sweep.id));
    std::fprintf(stderr,
                 "nodus: sweep s%lld runs in the background: nodus show s%lld, nodus logs s%lld, "
                 "nodus wait s%lld, nodus stop s%lld\n",
                 static_cast<long long>(sweep.id), static_cast<long long>(sweep.id),
                 static_cast<long long>(sweep.id), static_cast<long long>(sweep.id),
                 static_cast<long long>(sweep.id));
    return 0;
  }

  void print_plan(const Plan& p, Format format) const {
    std::vector<Column> cols = {{"cell", "CELL", true}};
    // Values under their own axis's column, in the order the params were given (the cell's
    // params JSON is an object, whose keys are sorted: not the columns' order).
    for (const auto& axis : p.grid.axes) cols.push_back({axis.name, axis.name});
    if (f.repeat > 1) cols.push_back({"repeat", "RUN", true});
    // Each cell's own GPUs when --gpu takes a param's value (H100:{gpus}).
    if (gpu_per_cell()) cols.push_back({"gpu_request", "GPUS"});
    cols.push_back({"command", "COMMAND"});
    Table t(cols);
    const uint64_t grid_cells = sweep::cell_count(p.grid);
    for (const auto& c : p.cells) {
      auto slot = engine::cell_slot(c.index, grid_cells);
      std::vector<std::string> text = {std::to_string(slot.grid_index + 1)};
      const auto shown = redact_argv(c.job.argv);
      nlohmann::json raw = {{"cell", slot.grid_index + 1}, {"command", shown}};
      for (const auto& param : sweep::cell_at(p.grid, slot.grid_index).params) {
        text.push_back(param.value);
        raw[param.name] = (*c.job.params)[param.name];
      }
      if (f.repeat > 1) {
        text.push_back(std::to_string(slot.repeat + 1));
        raw["repeat"] = slot.repeat + 1;
      }
      if (gpu_per_cell()) {
        const std::string gpus = gpu_flag_value(c.job);
        text.push_back(gpus);
        raw["gpu_request"] = gpus;
      }
      text.push_back(command_line(shown));
      t.add_row(text, raw);
    }
    print(t.render(format));
  }
};

}  // namespace

int supervise_sweep(const engine::Ticket& ticket,
                    const std::function<void(const std::string&)>& status) {
  auto store = open_store();
  auto found = store->sweep(ticket.sweep_id);
  if (!found) {
    status("error 125 sweep s" + std::to_string(ticket.sweep_id) + " not found");
    return exit_code::kNodusError;
  }
  store::SweepRecord sweep = *found;
  // What the sweep prints as it runs goes to its log (`nodus logs SWEEP`): the terminal it was
  // started from may be gone.
  std::string log = engine::sweep_log_path(*store, sweep.id);
  (void)ensure_private_folder(store->folder() + "/logs", false);  // no job may have made it yet
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    dup2(fd, 2);
    close(fd);
  }
  SweepCommand cmd;
  restore_flags(cmd.f, sweep, &ticket.env, &ticket.pricing);
  if (!ticket.argv.empty()) cmd.f.run.command = ticket.argv;
  Plan p = cmd.plan();
  if (p.hash != sweep.definition_hash) {
    status("error 125 sweep " + sweep_label(sweep) +
           ": its definition does not plan the same cells");
    return exit_code::kNodusError;
  }
  engine::mark_done(p.cells, store->sweep_cells(sweep.id));
  std::fprintf(stderr, "nodus: sweep %s started in the background (pid %d): %zu runs\n",
               sweep_label(sweep).c_str(), static_cast<int>(getpid()), p.cells.size());
  std::string state = engine::run_sweep(*store, sweep, p.cells, cmd.settings(p), false,
                                        [&status] { status("running"); });
  std::fprintf(stderr, "nodus: sweep %s ended %s\n", sweep_label(sweep).c_str(), state.c_str());
  return engine::sweep_exit_code(state);
}

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
  // The grid first: it is what a sweep is (clig.dev: the most used flags lead the help).
  sub->add_option("-p,--param", cmd->f.params,
                  "NAME=VALUES: 4,8,16 | 1..8 | 1..16:4 | 0.1..0.5:0.1 | 64..1024:x2 | "
                  "1e-5..1e-2:log4 (repeatable)")
      ->type_name("NAME=VALUES")
      ->check(param_value());
  add_run_flags(sub, cmd->f.run, /*sweep=*/true);
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
  sub->add_flag("-d,--detach", cmd->f.detach,
                "print the sweep id and return; a background supervisor runs the sweep");
  sub->add_option("--sample", cmd->f.sample,
                  "run N cells of the grid, picked at random (--seed) instead of every cell")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100000}));
  sub->add_option("--seed", cmd->f.seed, "the seed --sample picks cells with (default 1)")
      ->type_name("N");
  sub->add_option("--repeat", cmd->f.repeat,
                  "run each cell N times, interleaved; the table shows mean ± sd")
      ->type_name("N")
      ->check(CLI::Range(1, 100));
  sub->add_option("--stop-early", cmd->f.stop_early,
                  "stop a running cell whose steady cost per sample is more than FACTOR times "
                  "the best finished cell's (recorded as stopped early, with the money saved)")
      ->type_name("FACTOR");
  sub->add_option("-f,--file", cmd->f.file,
                  "read the sweep from a spec file (YAML; flags given here win over it)")
      ->type_name("FILE");
  sub->add_option("--save", cmd->f.save,
                  "write this command line as a spec file (for -f) and run nothing")
      ->type_name("FILE");
  sub->add_option("--objective", cmd->f.objective,
                  "rank cells by NAME[:max|min]: throughput (default), cost_per_msample, wall, "
                  "cost, or a metric the job reports (loss:min)")
      ->type_name("NAME[:DIR]");
  add_format_flag(sub, cmd->f.format);
  return {sub, [cmd, sub] {
            std::vector<const char*> definition;
            for (const DefinitionFlag& flag : kDefinitionFlags) definition.push_back(flag.option);
            cmd->given = given_options(*sub, definition);
            constexpr const char* kBudget[] = {"--budget"};
            cmd->budget_given = !given_options(*sub, kBudget).empty();
            cmd->unsaveable = given_options(*sub, kUnsaveableFlags);
            auto rest = job_command();
            if (!rest.empty()) cmd->f.run.command = rest;
            if (!cmd->f.file.empty()) {
              SweepSpec spec = spec_of(cmd->f);
              apply_spec_file(cmd->f.file, *sub, cmd->f.run, &spec);
              take_spec(cmd->f, spec);
            }
            return (*cmd)();
          }};
}

}  // namespace nodus::cli
