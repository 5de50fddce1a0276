#include "cli/common.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "backend/local/inventory.h"
#include "cli/args.h"
#include "core/config.h"
#include "core/error.h"
#include "core/parse.h"
#include "core/text.h"
#include "engine/reconcile.h"
#include "sweep/metric_regex.h"
#include "telemetry/phases.h"
#include "telemetry/pyhook.h"

namespace nodus::cli {

namespace {
std::optional<std::vector<std::string>>& trailing() {
  static std::optional<std::vector<std::string>> command;
  return command;
}

// --nodes: a whole number of nodes; "" when `text` is one, else what is wrong with it.
constexpr int kMaxNodes = 1024;
std::string nodes_problem(const std::string& text) {
  bool digits = !text.empty() && text.size() <= 4 &&
                text.find_first_not_of("0123456789") == std::string::npos;
  int n = digits ? std::stoi(text) : 0;
  if (n >= 1 && n <= kMaxNodes) return "";
  return "invalid value '" + escape_control(text) +
         "': expected a whole number of nodes from 1 to " + std::to_string(kMaxNodes);
}

CLI::Validator nodes_value() {
  return CLI::Validator([](std::string& v) { return nodes_problem(v); }, "", "");
}

// --nodes on Slurm only: the local backend is one machine.
int parse_nodes(const std::string& text, const std::string& backend) {
  if (auto problem = nodes_problem(text); !problem.empty()) throw Fatal("--nodes: " + problem);
  if (backend != "slurm")
    throw Fatal("--nodes " + text +
                ": multi-node jobs run on Slurm only (--backend slurm), not --backend " + backend);
  return std::stoi(text);
}

}  // namespace

void set_trailing_command(std::vector<std::string> command) { trailing() = std::move(command); }

std::vector<std::string> job_command() { return trailing().value_or(std::vector<std::string>{}); }

void add_run_flags(CLI::App* sub, RunFlags& f, bool sweep) {
  auto* gpu = sub->add_option("--gpu", f.gpu,
                              sweep ? "GPUs of each cell as TYPE[:COUNT] (H100, h100:8, L4) or "
                                      "none; {NAME} takes a param's value (H100:{gpus})"
                                    : "GPUs as TYPE[:COUNT] (H100, h100:8, L4) or none");
  gpu->type_name("TYPE[:COUNT]")->capture_default_str();
  // A sweep's placeholders are checked, and each cell's value parsed, when the sweep plans.
  gpu->check(gpu_value(/*placeholders=*/sweep));
  sub->add_option("--max-cost", f.max_cost, "stop before the job costs more than USD (5, 5.00, $5)")
      ->type_name("USD")
      ->check(usd_value());
  sub->add_option("--timeout", f.timeout, "stop after DURATION (90s, 30m, 2h, 1h30m, 1d)")
      ->type_name("DURATION")
      ->check(duration_value());
  sub->add_option("--grace", f.grace, "time between SIGTERM and SIGKILL")
      ->type_name("DURATION")
      ->check(duration_value())
      ->capture_default_str();
  sub->add_option("--name", f.name, "a name for the job (not of the form 42 or s3)")
      ->type_name("NAME")
      ->check(name_value());
  sub->add_option("-e,--env", f.env, "K=V added to the job's environment (repeatable)")
      ->type_name("K=V")
      ->check(env_value());
  sub->add_option("-w,--workdir", f.workdir, "working directory of the job")->type_name("DIR");
  sub->add_option("--image", f.image, "run inside this container image (podman or docker)")
      ->type_name("IMAGE")
      ->check(image_value());
  sub->add_option("--backend", f.backend, "local or slurm (default $NODUS_BACKEND or local)")
      ->type_name("local|slurm")
      ->check(one_of({"local", "slurm"}));
  sub->add_option("--nodes", f.nodes,
                  "run on N Slurm nodes, one task each, with torchrun-style rendezvous variables "
                  "(MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK, WORLD_SIZE, RANK); --gpu is per "
                  "node, and the bill and caps cover every node")
      ->type_name("N")
      ->check(nodes_value());
  add_prices_flags(sub, f.prices, f.prices_only);
  sub->add_option("--rate", f.rate,
                  "the USD per hour actually paid, instead of the catalog's (per GPU; the whole "
                  "box with --rate-per box)")
      ->type_name("USD_PER_HOUR")
      ->check(usd_value());
  sub->add_option("--rate-per", f.rate_per, "what --rate is for: gpu or box")
      ->type_name("gpu|box")
      ->check(one_of({"gpu", "box"}))
      ->capture_default_str();
  sub->add_flag("--no-wait", f.no_wait, "fail instead of waiting when the GPUs are busy");
  sub->add_option("--sample-interval", f.sample_interval, "telemetry sampling period (>= 50ms)")
      ->type_name("DURATION")
      ->check(duration_value())
      ->capture_default_str();
  sub->add_option("--min-util", f.min_util,
                  "stop when mean GPU utilization over --util-window is below PCT")
      ->type_name("PCT")
      ->check(percent_value());
  sub->add_option("--util-window", f.util_window, "window for --min-util")
      ->type_name("DURATION")
      ->check(duration_value())
      ->capture_default_str();
  sub->add_option("--metric-regex", f.metric_regex,
                  "NAME=REGEX: a metric from the job's output lines (repeatable)")
      ->type_name("NAME=REGEX");
  sub->add_option("--throughput", f.throughput, "metric that measures throughput")
      ->type_name("METRIC")
      ->capture_default_str();
  sub->add_flag("--no-instrument", f.no_instrument,
                "do not time the DataLoader of a Python job (nodus's sitecustomize hook)");
  sub->add_flag("--profile", f.profile,
                "run torch.profiler over DataLoader batches 8-12 of a Python job (wait 5, warm-up "
                "2, active 5) and diagnose syncs, launch overhead and FP32 math from its trace");
  sub->add_option("--loader", f.loader,
                  "set the DataLoader's num_workers, pin_memory, persistent_workers, "
                  "prefetch_factor or batch_size in an unmodified Python script, through nodus's "
                  "hook (num_workers=8,pin_memory=true; repeatable)")
      ->type_name("KNOB=VALUE");
  sub->add_flag("--tf32", f.tf32,
                "turn on TF32 for FP32 matmuls and convolutions in an unmodified PyTorch script "
                "from its first DataLoader batch, through nodus's hook (changes the numerics: "
                "10-bit mantissas in the products)");
  sub->add_option("--warmup", f.warmup,
                  "batches (20) or time (5s) after the first batch left out of the figures")
      ->type_name("N|DURATION")
      ->capture_default_str();
  sub->add_option("--cpus-per-gpu", f.cpus_per_gpu,
                  "CPUs per GPU the job runs on (default: the GPUs' share of the host)")
      ->type_name("N")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--log-limit", f.log_limit,
                  "keep at most SIZE of the job's output in its log: the first and the last half "
                  "(512M, 1G, 2GiB; none keeps all)")
      ->type_name("SIZE")
      ->check(size_value(kMinLogLimit))
      ->capture_default_str();
  sub->add_option("--measure", f.measure,
                  "stop the job after DURATION of steady state (after warm-up); it completed")
      ->type_name("DURATION")
      ->check(duration_value());
}

void check_loader_reach(const RunFlags& f, const engine::JobRequest& r, const std::string& flag) {
  // Refused before anything runs where the hook cannot set them: never a knob asked for and
  // silently not set.
  const std::string why =
      f.no_instrument ? "they are set by nodus's Python hook: drop --no-instrument"
      : r.backend != "local" && !r.image.empty()
          ? "a --backend " + r.backend + " job in a container does not get nodus's Python hook"
      : !telemetry::runs_python(r.argv)
          ? "'" + (r.argv.empty() ? std::string() : r.argv[0]) +
                "' does not run Python: the knobs reach a PyTorch DataLoader through nodus's "
                "Python hook"
          : telemetry::python_ignores_hook(r.argv).value_or("");
  if (!why.empty()) throw Fatal(flag + ": " + why);
}

std::string gpu_flag_value(const JobRecord& job) {
  return job.gpu_count > 0 ? job.gpu_type + ":" + std::to_string(job.gpu_count) : "none";
}

engine::JobRequest to_request(const RunFlags& f) {
  check_config_choices();
  engine::JobRequest r;
  r.argv = f.command;
  r.name = f.name;
  if (!f.name.empty()) value_or_throw(check_name(f.name, "--name"));
  r.backend = f.backend.empty() ? config_get("backend") : f.backend;
  if (r.backend != "local" && r.backend != "slurm")
    throw Fatal("--backend: unknown backend '" + r.backend + "': expected local or slurm");
  r.gpu = value_or_throw(parse_gpu_request(f.gpu));
  if (!f.nodes.empty()) r.supervise.nodes = parse_nodes(f.nodes, r.backend);
  if (!f.max_cost.empty()) r.max_cost = value_or_throw(parse_usd(f.max_cost, "--max-cost"));
  if (!f.timeout.empty()) r.timeout = value_or_throw(parse_duration(f.timeout, "--timeout"));
  r.grace = value_or_throw(parse_duration(f.grace, "--grace"));
  for (const auto& kv : f.env) r.env.insert(value_or_throw(parse_env_assignment(kv)));
  r.workdir = f.workdir;
  r.image = f.image;
  // Slurm without an OCI runtime (oci.conf) records the container and runs the job on the node
  // itself (measured, Slurm 22.05: `cat /etc/alpine-release` of an alpine image failed on the
  // node's Debian), and nodus cannot see oci.conf through slurmrestd: the site says it has one.
  if (r.backend == "slurm" && !r.image.empty() && config_get("slurm_containers") != "oci")
    throw Fatal("--image " + r.image +
                ": this Slurm cluster is not declared to run jobs in containers, and one "
                "without Slurm's oci.conf runs the job outside any image without a word; set "
                "NODUS_SLURM_CONTAINERS=oci where its nodes have it");
  if (!f.rate.empty()) {
    r.rate = value_or_throw(parse_usd(f.rate, "--rate"));
    r.rate_per_box = f.rate_per == "box";
    double most = billing::kMaxUsdPerGpuHour * (r.rate_per_box ? std::max(1, r.gpu.count) : 1);
    if (*r.rate > most)
      throw Fatal("--rate: invalid value '" + f.rate + "': at most " + format_usd(most) +
                  (r.rate_per_box ? " for the box" : " per GPU-hour"));
  } else if (f.rate_per != "gpu") {
    throw Fatal("--rate-per " + f.rate_per + ": give the rate with --rate USD_PER_HOUR");
  }
  if (auto box = config_env("local_usd_per_hour")) {
    r.box_rate = value_or_throw(parse_usd(*box, "NODUS_LOCAL_USD_PER_HOUR"));
    if (*r.box_rate > billing::kMaxUsdPerGpuHour)
      throw Fatal("NODUS_LOCAL_USD_PER_HOUR: invalid value '" + *box + "': at most " +
                  format_usd(billing::kMaxUsdPerGpuHour));
  }
  r.supervise.sample_interval =
      value_or_throw(parse_duration(f.sample_interval, "--sample-interval"));
  if (r.supervise.sample_interval < Millis(50))
    throw Fatal("--sample-interval: invalid value '" + f.sample_interval + "': at least 50ms");
  if (!f.min_util.empty())
    r.supervise.min_util = value_or_throw(parse_percent(f.min_util, "--min-util"));
  if (r.supervise.min_util && r.gpu.none())
    throw Fatal("--min-util " + f.min_util +
                ": it stops a job whose GPUs idle, and this job asks for none (add --gpu "
                "TYPE[:COUNT])");
  r.supervise.util_window = value_or_throw(parse_duration(f.util_window, "--util-window"));
  // Checked here, before anything runs or is stored: the supervisor compiles them again.
  (void)value_or_throw(sweep::parse_metric_regexes(f.metric_regex));
  r.supervise.metric_regexes = f.metric_regex;
  r.supervise.throughput_metric = f.throughput;
  r.supervise.instrument = !f.no_instrument;
  if (f.profile && f.no_instrument)
    throw Fatal("--profile: the profiler runs inside nodus's Python hook: drop --no-instrument");
  r.supervise.profile = f.profile;
  r.supervise.loader = value_or_throw(telemetry::parse_loader_knobs(f.loader));
  if (!r.supervise.loader.empty()) check_loader_reach(f, r);
  r.supervise.tf32 = f.tf32;
  if (f.tf32) check_loader_reach(f, r, "--tf32");
  if (!telemetry::parse_warmup(f.warmup))
    throw Fatal("--warmup: invalid value '" + f.warmup +
                "': expected a number of batches (20) or a duration (5s, 1m)");
  r.supervise.warmup = f.warmup;
  if (f.cpus_per_gpu > 0) r.supervise.cpus_per_gpu = f.cpus_per_gpu;
  r.supervise.log_limit = value_or_throw(parse_size(f.log_limit, "--log-limit", kMinLogLimit));
  if (!f.measure.empty()) {
    r.supervise.measure = value_or_throw(parse_duration(f.measure, "--measure"));
    if (r.supervise.measure->count() <= 0)
      throw Fatal("--measure: invalid value '" + f.measure + "': a duration above 0 (60s, 5m)");
  }
  return r;
}

std::unique_ptr<store::Store> open_store() {
  return store::Store::open(store::Store::default_path());
}

std::unique_ptr<store::Store> open_store_to_read() {
  const std::string path = store::Store::default_path();
  try {
    return open_store();
  } catch (const Fatal& e) {
    if (::access(path.c_str(), F_OK) != 0) throw;
    std::unique_ptr<store::Store> store;
    try {
      store = store::Store::open_read_only(path);
    } catch (const Fatal&) {
      throw e;  // the first reason is the one to fix
    }
    std::fprintf(stderr, "nodus: %s: showing the store read-only, as last written\n", e.what());
    return store;
  }
}

void reconcile_to_read(store::Store& store) {
  if (store.read_only()) return;
  try {
    engine::reconcile(store);
  } catch (const Fatal& e) {
    std::fprintf(stderr,
                 "nodus: cannot bring the store up to date (%s): showing it as last "
                 "written\n",
                 e.what());
  }
}

billing::Catalog load_catalog(const std::string& prices_flag, bool prices_only) {
  std::optional<std::string> flag;
  if (!prices_flag.empty()) flag = prices_flag;
  return value_or_throw(billing::Catalog::resolve(flag, nodus_home() + "/cache", prices_only));
}

void add_prices_flags(CLI::App* sub, std::string& prices, bool& prices_only) {
  sub->add_option("--prices", prices,
                  "price catalog merged over the built-in one: a JSON file or an https URL")
      ->type_name("FILE|URL");
  sub->add_flag("--prices-only", prices_only,
                "use the --prices (or NODUS_PRICES) catalog alone, without the built-in entries");
}

engine::Inventory local_inventory(const billing::Catalog& catalog) {
  return value_or_throw(backend::local::detect_local_inventory(catalog));
}

void add_format_flag(CLI::App* sub, std::string& format) {
  sub->add_option("--format", format, "table, json, csv or md")
      ->type_name("FORMAT")
      ->check(format_value())
      ->capture_default_str();
}

Format format_from(const std::string& text) { return value_or_throw(parse_format(text)); }

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                   "-_./=:,+@%") == std::string::npos;
    std::string q = plain ? a : "'" + a + "'";
    if (!plain) {
      std::string esc;
      for (char c : a) esc += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      q = "'" + esc + "'";
    }
    out += (out.empty() ? "" : " ") + q;
  }
  return out;
}

std::string ago(double t) {
  double d = unix_now() - t;
  if (d < 0) d = 0;
  char buf[32];
  if (d < 60)
    std::snprintf(buf, sizeof buf, "%ds ago", static_cast<int>(d));
  else if (d < 3600)
    std::snprintf(buf, sizeof buf, "%dm ago", static_cast<int>(d / 60));
  else if (d < 86400)
    std::snprintf(buf, sizeof buf, "%dh ago", static_cast<int>(d / 3600));
  else
    std::snprintf(buf, sizeof buf, "%dd ago", static_cast<int>(d / 86400));
  return buf;
}

}  // namespace nodus::cli
