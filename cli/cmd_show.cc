// nodus show JOB|SWEEP: one job in full (with utilization, idle dollars and the diagnosis), or a
// sweep's comparison table.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "cli/job_views.h"
#include "cli/sweep_views.h"
#include "core/cost.h"
#include "core/error.h"
#include "core/parse.h"
#include "core/text.h"
#include "engine/reconcile.h"
#include "store/job_stats.h"
#include "telemetry/diagnosis.h"
#include "telemetry/pyhook.h"
#include "telemetry/summary.h"
#include "telemetry/util_series.h"

namespace nodus::cli {

namespace {

std::string opt_usd(const std::optional<double>& v) { return v ? format_usd(*v) : "-"; }

// --loader: what was asked, then for each DataLoader what the hook set and what it could not
// set, and why; when it set nothing, why not. `stats`: the job's figures (null: none).
std::vector<std::string> loader_lines(const nlohmann::json& options, const nlohmann::json* stats) {
  std::string asked;
  const nlohmann::json knobs = options.value("loader", nlohmann::json::object());
  for (const auto& [knob, value] : knobs.items())
    asked += (asked.empty() ? "" : ", ") + knob + "=" + value.get<std::string>() +
             (telemetry::changes_training(knob) ? " (changes the training)" : "");
  std::vector<std::string> lines = {"asked " + asked};
  const auto ins = options.value("instrumentation", nlohmann::json::object());
  if (!ins.value("on", false)) {
    lines.push_back("none set: the hook was off (" + ins.value("why", std::string("?")) + ")");
    return lines;
  }
  if (!stats || !stats->contains("loader_overrides")) {
    lines.push_back(
        "not known: the hook wrote nothing (the job ended before its loop and its exit)");
    return lines;
  }
  const nlohmann::json built =
      (*stats)["loader_overrides"].value("loaders", nlohmann::json::array());
  if (built.empty()) lines.push_back("none set: the job built no DataLoader");
  for (const auto& l : built) {
    std::string name =
        l.contains("name") && l["name"].is_string()
            ? l["name"].get<std::string>()
            : l.value("dataset", std::string("?")) + " built at " +
                  (l.contains("site") && l["site"].is_string() ? l["site"].get<std::string>()
                                                               : std::string("?"));
    std::string set, refused;
    const nlohmann::json was = l.value("was", nlohmann::json::object());
    const nlohmann::json applied = l.value("applied", nlohmann::json::object());
    const nlohmann::json refusals = l.value("refused", nlohmann::json::object());
    for (const auto& [knob, value] : applied.items())
      set += (set.empty() ? "" : ", ") + knob + " " +
             (was.contains(knob) ? was[knob].dump() : std::string("?")) + " -> " + value.dump();
    for (const auto& [knob, why] : refusals.items())
      refused += (refused.empty() ? "" : "; ") + knob + " (" +
                 (why.is_string() ? why.get<std::string>() : why.dump()) + ")";
    lines.push_back(name + ": " + (set.empty() ? "nothing set" : set) +
                    (refused.empty() ? "" : "; not set: " + refused));
  }
  return lines;
}

// What --tf32 did, as the hook reported it: set at the first batch (and what the flags were),
// not set (why), or not known.
std::string tf32_line(const nlohmann::json* stats) {
  if (!stats || !stats->contains("math_overrides") || !(*stats)["math_overrides"].is_object())
    return "asked; not known: the hook wrote nothing";
  const nlohmann::json m = (*stats)["math_overrides"];
  if (m.contains("refused"))
    return "asked; not set: " +
           (m["refused"].is_string() ? m["refused"].get<std::string>() : m["refused"].dump());
  auto flags = [&](const char* key) {
    const nlohmann::json f = m.value(key, nlohmann::json::object());
    auto one = [&](const char* name) {
      return f.contains(name) && f[name].is_boolean() ? (f[name].get<bool>() ? "on" : "off") : "?";
    };
    return std::string("matmul ") + one("matmul") + ", cuDNN " + one("cudnn");
  };
  std::string out =
      "set at the " + m.value("set_at", std::string("?")) + " (was " + flags("was") + ")";
  if (m.contains("last")) out += "; at the end " + flags("last");
  return out;
}

void field(Table& t, const std::string& k, const std::string& v) {
  t.add_row({k, v}, {{"field", k}, {"value", v}});
}

// What the job is: its command, resources, caps, outcome, environment and the knobs nodus set.
void job_rows(Table& t, const JobRecord& job, const nlohmann::json* stats) {
  field(t, "id", std::to_string(job.id));
  if (!job.name.empty()) field(t, "name", job.name);
  field(t, "state", std::string(to_string(job.state)));
  field(t, "command", command_line(job.argv));
  field(t, "backend", job.backend + (job.backend_id.empty() ? "" : " (" + job.backend_id + ")"));
  field(t, "gpu",
        gpu_label(job) + (job.inventory_source.empty() ? "" : " from " + job.inventory_source));
  if (int nodes = nodes_of(job); nodes > 1)
    field(t, "nodes", std::to_string(nodes) + ", one task each (Slurm)");
  if (job.gpu_count) field(t, "rate", format_usd(job.rate_per_gpu_hour) + "/GPU-hour");
  field(t, "max cost", opt_usd(job.max_cost));
  field(t, "timeout", job.timeout_ms ? format_duration(Millis(*job.timeout_ms)) : "-");
  if (std::string stop = stop_text(job); !stop.empty()) field(t, "stop", stop);
  field(t, "wall",
        job.started_at ? format_duration(Millis(static_cast<long long>(wall_seconds(job) * 1000)))
                       : "-");
  field(t, "cost", format_usd(live_cost(job)));
  field(t, "exit code", job.exit_code ? std::to_string(*job.exit_code) : "-");
  if (job.signal) field(t, "signal", std::to_string(*job.signal));
  if (!job.image.empty()) field(t, "image", job.image);
  field(t, "workdir", job.workdir);
  field(t, "log", job.log_path);
  if (!job.note.empty()) field(t, "note", job.note);
  if (job.sweep_id)
    field(t, "sweep",
          "s" + std::to_string(*job.sweep_id) + " cell " + std::to_string(job.cell_index + 1));
  for (const auto& [k, v] : job.env) field(t, "env " + k, redact_env_value(k, v));

  if (job.options->contains("instrumentation")) {
    // What the hook timed once the job ended (stats), else what was set up at launch.
    const auto& ins =
        stats && stats->contains("instrumentation") && (*stats)["instrumentation"].is_object()
            ? (*stats)["instrumentation"]
            : (*job.options)["instrumentation"];
    field(t, "instrumented",
          std::string(ins.value("on", false) ? "yes: " : "no: ") + ins.value("why", std::string()));
  }
  if (job.options->contains("loader") && (*job.options)["loader"].is_object())
    for (const std::string& line : loader_lines(*job.options, stats))
      field(t, "loader knobs", line);
  if (job.options->value("tf32", false)) field(t, "tf32", tf32_line(stats));
}

// What the loop's thread was doing outside forward, backward and the optimizer over the profiled
// steps (the hook's look at it every millisecond; a loop driven by optimizer steps): the
// functions in the job's own files that took the most of the step, each with what that share
// of the job's hourly rate buys, and the syncs by the line that called them.
void waited_rows(Table& t, const nlohmann::json& lines, double usd_per_hour) {
  char buf[320];
  int shown = 0;
  for (const auto& f : lines.value("functions", nlohmann::json::array())) {
    const double share = f.value("share", 0.0);
    if (share < 0.01 || ++shown > 3) break;  // most first: the rest are smaller
    std::snprintf(buf, sizeof buf, "%s at %s: %s of the step", f.value("function", "?").c_str(),
                  f.value("site", "?").c_str(), format_percent(100 * share).c_str());
    std::string text = buf;
    if (usd_per_hour > 0) text += ", " + format_usd(share * usd_per_hour) + "/h";
    field(t, "outside step", text);
  }
  for (const auto& y : lines.value("syncs", nlohmann::json::array())) {
    std::snprintf(buf, sizeof buf, "%.3g per step at %s, %s of the step", y.value("per_step", 0.0),
                  y.value("site", "?").c_str(),
                  format_percent(100 * y.value("share", 0.0)).c_str());
    field(t, "sync " + y.value("what", std::string("?")), buf);
  }
}

// What --profile found in the job's trace.
void profile_rows(Table& t, const nlohmann::json& profile, double usd_per_hour) {
  const auto& p = profile;
  if (p.contains("meta") && p["meta"].is_object() && p["meta"].contains("lines") &&
      p["meta"]["lines"].is_object())
    waited_rows(t, p["meta"]["lines"], usd_per_hour);
  // With CUDA: the GPU's idle inside the steps, put down to where the loop's thread was.
  int shown = 0;
  for (const auto& i : p.value("idle_sites", nlohmann::json::array())) {
    const double share = i.value("share", 0.0);
    if (share < 0.01 || ++shown > 3) break;
    const std::string kind = i.value("kind", std::string());
    const std::string what = i.value("what", std::string());
    std::string text = i.value("site", std::string("?")) + ": " + format_percent(100 * share) +
                       " of the step idle (" + (what.empty() ? kind : kind + " " + what) + ")";
    if (usd_per_hour > 0) text += ", " + format_usd(share * usd_per_hour) + "/h";
    field(t, "gpu waited on", text);
  }
  char buf[320];
  if (p.contains("steps") && p.value("cuda", false))
    std::snprintf(buf, sizeof buf,
                  "%d steps of %.2f ms: GPU busy %.0f%%, idle fetching %.0f%%, after syncs "
                  "%.0f%%, otherwise %.0f%%; %.3g syncs, %.0f kernels (median %.3g us) per "
                  "step; FP32 GEMM/conv %.0f%% of GPU time",
                  p.value("steps", 0), p.value("step_ms", 0.0),
                  100 * p.value("gpu_busy_share", 0.0), 100 * p.value("idle_fetch_share", 0.0),
                  100 * p.value("idle_sync_share", 0.0), 100 * p.value("idle_inside_share", 0.0),
                  p.value("syncs_per_step", 0.0), p.value("kernels_per_step", 0.0),
                  p.value("median_kernel_us", 0.0), 100 * p.value("fp32_gemm_share", 0.0));
  else if (p.contains("steps"))
    std::snprintf(buf, sizeof buf, "%d steps of %.2f ms (CPU only: the GPU rows cannot be judged)",
                  p.value("steps", 0), p.value("step_ms", 0.0));
  else
    std::snprintf(buf, sizeof buf, "%s", p.value("note", std::string("no trace")).c_str());
  field(t, "profile", buf);
  if (p.contains("trace")) field(t, "trace", p["trace"].get<std::string>());
  for (const auto& s : p.value("sync_sites", nlohmann::json::array())) {
    std::snprintf(buf, sizeof buf, "%.3g per step%s%s", s.value("per_step", 0.0),
                  s.value("site", std::string()).empty() ? "" : " at ",
                  s.value("site", std::string()).c_str());
    std::string text = buf;
    if (p.value("cuda", false)) {  // a CPU trace has no GPU to idle
      std::snprintf(buf, sizeof buf, ", GPU idle %.3g ms after each",
                    s.value("gpu_idle_ms_each", 0.0));
      text += buf;
    }
    field(t, "sync " + s.value("what", std::string()), text);
  }
  for (const auto& o : p.value("top_ops", nlohmann::json::array())) {
    std::snprintf(buf, sizeof buf, "%.3f ms per step (%s)", o.value("ms_per_step", 0.0),
                  p.value("top_ops_by", std::string()).c_str());
    field(t, "top op", o.value("name", std::string()) + ": " + buf);
  }
}

// The optimizer steps the hook counted: "1200 optimizer steps, 8.41 steps/s steady, 118.9 ms
// per step, 32768 tokens per step"; what was not seen, said.
std::string optimizer_steps_text(const nlohmann::json& o, double steps_per_sec) {
  const int64_t steps = o.value("steps", int64_t{0});
  if (steps == 0)
    return o.value("model_seen", false) ? "no optimizer step seen (torch.optim)"
                                        : "no optimizer step and no module call seen";
  std::string text = std::to_string(steps) + " optimizer steps";
  char buf[96];
  if (steps_per_sec > 0) {
    std::snprintf(buf, sizeof buf, ", %.4g steps/s steady", steps_per_sec);
    text += buf;
  }
  if (o.contains("step_s") && o["step_s"].is_number()) {
    std::snprintf(buf, sizeof buf, ", %.4g ms per step", 1000 * o["step_s"].get<double>());
    text += buf;
  }
  const double tokens = o.value("tokens", 0.0), samples = o.value("samples", 0.0);
  if (tokens > 0) {
    std::snprintf(buf, sizeof buf, ", %.0f tokens per step", tokens / static_cast<double>(steps));
    text += buf;
  } else if (samples > 0) {
    std::snprintf(buf, sizeof buf, ", %.4g samples per step", samples / static_cast<double>(steps));
    text += buf;
  } else if (!o.value("model_seen", false)) {
    text += ", no nn.Module call seen (samples unknown)";
  }
  return text;
}

// "31.2% of H100-SXM's 989.4 TFLOPS dense BF16 (matmuls in bf16; 38.1 TFLOP per step, 309
// TFLOP/s achieved); $1.79/h of arithmetic paid for and unused", or what is missing.
std::string mfu_text(const nlohmann::json& m) {
  char buf[400];
  const double per_step = m.value("flops_per_step", 0.0) / 1e12;
  const double achieved = m.value("achieved_tflops", 0.0);
  const std::string precision = m.value("precision", std::string());
  if (!m.contains("value")) {
    std::snprintf(buf, sizeof buf, "not known: %s (%.4g TFLOP per step, %.4g TFLOP/s achieved)",
                  m.value("note", std::string("no peak")).c_str(), per_step, achieved);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%s of %s's %.4g TFLOPS dense BF16 (matmuls in %s; %.4g TFLOP per step, %.4g "
                "TFLOP/s achieved)",
                format_percent(100 * m["value"].get<double>()).c_str(),
                m.value("gpu_type", std::string("the GPU")).c_str(), m.value("peak_tflops", 0.0),
                precision.empty() ? "?" : precision.c_str(), per_step, achieved);
  std::string text = buf;
  if (m.contains("value_at_precision"))
    text += "; " + format_percent(100 * m["value_at_precision"].get<double>()) + " of its " +
            precision + " peak";
  if (m.contains("unused_usd_per_hour"))
    text += "; " + format_usd(m["unused_usd_per_hour"].get<double>()) +
            "/h of arithmetic paid for and unused";
  return text;
}

// What was measured: utilization, CPU, data wait, throughput, loaders, I/O, the profile, the
// findings and a fix tried.
void stats_rows(Table& t, store::Store& store, const JobRecord& job, const nlohmann::json& v) {
  telemetry::Summary s = v.get<telemetry::Summary>();
  if (s.util_mean) {
    field(t, "gpu util",
          "mean " + format_percent(*s.util_mean) + ", median " +
              format_percent(s.util_median.value_or(0)) + ", idle " +
              format_percent(100 * s.idle_fraction.value_or(0)) + " of samples");
    field(t, "idle cost", opt_usd(s.idle_usd) + " of " + format_usd(job.cost));
    std::string spark = telemetry::util_sparkline(store.gpu_samples(job.id), 60);
    if (!spark.empty()) field(t, "util over time", spark);
  } else if (v.contains("gpu_note")) {
    field(t, "gpu util", v["gpu_note"].get<std::string>());
  }
  if (s.cpu_percent_mean)
    field(t, "cpu",
          format_percent(*s.cpu_percent_mean) + " of one core (" +
              format_percent(100 * s.cpu_saturation.value_or(0)) + " of " +
              std::to_string(s.cores.value_or(0)) + " cores)");
  auto source = [&](const char* key) {
    std::string text = v.value(key, std::string());
    return text.empty() ? std::string() : " (" + text + ")";
  };
  if (v.contains("phases")) field(t, "phases", v["phases"].value("text", std::string()));
  if (s.data_wait_share)
    field(t, "data wait", format_percent(100 * *s.data_wait_share) + source("data_wait_source"));
  if (v.contains("optimizer_steps") && v["optimizer_steps"].is_object())
    field(t, "steps",
          optimizer_steps_text(v["optimizer_steps"], v.value("instrumented_steps_per_sec", 0.0)));
  if (v.contains("throughput") && v["throughput"].is_number()) {
    field(t, "throughput",
          format_throughput(v["throughput"].get<double>()) + " " +
              v.value("throughput_metric", std::string("samples_per_sec")) +
              source("throughput_source"));
  }
  if (v.contains("mfu") && v["mfu"].is_object()) field(t, "mfu", mfu_text(v["mfu"]));
  if (v.contains("metrics_note")) field(t, "metrics", v["metrics_note"].get<std::string>());
  if (v.contains("loaders") && v["loaders"].is_array()) {
    std::string driver = v.value("loader_driver", std::string());
    for (const auto& l : v["loaders"]) {
      std::string name = l.value("name", std::string("?"));
      field(t, name == driver ? "loader (table)" : "loader",
            name + ": " + std::to_string(l.value("batches", 0)) + " batches, " +
                std::to_string(l.value("samples", 0)) + " samples" +
                (l.contains("workers") && l["workers"].is_number_integer()
                     ? ", num_workers=" + std::to_string(l["workers"].get<int>())
                     : std::string()));
    }
    if (v.value("ranks", 1) > 1) field(t, "ranks", std::to_string(v["ranks"].get<int>()));
  }
  // Each rank's figures (nodus's hook, one file per rank), and which one the others wait for.
  if (v.contains("per_rank") && v["per_rank"].is_array()) {
    const bool steps_loop =
        v.value("data_wait_source", std::string()) == telemetry::kOutOfStepSource;
    for (const auto& r : v["per_rank"]) {
      std::string text = r.contains("node") ? r["node"].get<std::string>() + ": " : "";
      text += format_throughput(r.value("samples_per_sec", 0.0)) + " samples_per_sec";
      if (r.contains("data_wait"))
        text += (steps_loop ? ", outside step " : ", data wait ") +
                format_percent(100 * r["data_wait"].get<double>());
      if (r.contains("step_time")) {
        char buf[64];
        std::snprintf(buf, sizeof buf, ", step %.1f ms", 1000 * r["step_time"].get<double>());
        text += buf;
      }
      field(t, "rank " + std::to_string(r.value("rank", 0)), text);
    }
    if (v.contains("ranks_note")) field(t, "slowest rank", v["ranks_note"].get<std::string>());
  }
  if (v.contains("io") &&
      (v["io"].value("readable", false) || v["io"].contains("cgroup_read_bytes"))) {
    const auto& io = v["io"];
    double bytes = io.value("cgroup_read_bytes", io.value("read_bytes", 0.0));
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.1f MiB read from storage over %.0f s (%s)",
                  bytes / (1024.0 * 1024.0), io.value("seconds", 0.0),
                  io.value("source", std::string("/proc/PID/io")).c_str());
    std::string text = buf;
    if (io.contains("cgroup_note")) text += "; " + io["cgroup_note"].get<std::string>();
    field(t, "io", text);
  }
  if (v.contains("profile"))
    profile_rows(t, v["profile"], 3600 * usd_per_second(job.gpu_count, job.rate_per_gpu_hour));
  if (v.contains("findings"))
    for (const auto& f : v["findings"])
      field(t, f.value("note", false) ? "note" : "diagnosis",
            f.value("evidence", "") + ": " + f.value("cause", "") + " -> " + f.value("fix", ""));
  // nodus try: the first finding's fix, measured on this job's command.
  if (v.contains("tried") && v["tried"].is_object())
    field(t, "fix tried",
          "job " + std::to_string(v["tried"].value("job", int64_t{0})) + ": " +
              v["tried"].value("verdict", std::string()));
}

void print_job(store::Store& store, const JobRecord& job, Format format) {
  auto stats = store.stats(job.id);
  if (format == Format::kJson) {
    nlohmann::json j = job_json(job);
    j["stats"] = stats ? stats_json(stats->values) : nlohmann::json::object();
    return print(dump_json(j) + "\n");
  }
  Table t({{"field", "FIELD"}, {"value", "VALUE"}});
  job_rows(t, job, stats ? &stats->values : nullptr);
  if (stats) stats_rows(t, store, job, stats->values);
  if (format == Format::kTable) {
    for (size_t i = 0; i < t.size(); ++i)
      std::printf("%-16s %s\n", escape_control(t.raw(i)["field"].get<std::string>()).c_str(),
                  escape_control(t.raw(i)["value"].get<std::string>()).c_str());
  } else {
    print(t.render(format));
  }
}

struct ShowCommand {
  std::string id;
  std::string format = "table";
  std::string sort;
  std::string objective;
  std::vector<std::string> columns;

  int operator()() const {
    Format f = format_from(format);
    auto store = open_store_to_read();
    reconcile_to_read(*store);
    bool looks_like_sweep =
        !id.empty() && id[0] == 's' && id.find_first_not_of("0123456789", 1) == std::string::npos;
    if (!looks_like_sweep) {
      if (auto job = store->find_job(id)) return print_job(*store, *job, f), 0;
    }
    if (auto sweep = store->find_sweep(id))
      return print_sweep(*store, *sweep, {sort, objective, columns}, f), 0;
    throw Fatal("unknown job or sweep '" + escape_control(id) +
                "': see nodus ps -a and nodus sweeps");
  }
};
}  // namespace

Command add_show(CLI::App& app) {
  auto cmd = std::make_shared<ShowCommand>();
  CLI::App* sub = app.add_subcommand(
      "show", "show a job (utilization, idle cost, diagnosis) or a sweep's table");
  set_examples(
      sub, {"nodus show 42", "nodus show resnet --format json", "nodus show s3 --sort cost_usd"});
  sub->add_option("id", cmd->id, "job id or name, or sweep id (s3) or name")
      ->type_name("JOB|SWEEP")
      ->required();
  sub->add_option(
         "--sort", cmd->sort,
         "sweep table: sort by this column, by its json key (cost_usd, wall_s, throughput, ...)")
      ->type_name("COLUMN");
  sub->add_option("--objective", cmd->objective,
                  "sweep table: rank cells by NAME[:max|min] (default: the sweep's own)")
      ->type_name("NAME[:DIR]");
  sub->add_option("--columns", cmd->columns, "sweep table: show these columns (comma list)")
      ->type_name("KEYS");
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
