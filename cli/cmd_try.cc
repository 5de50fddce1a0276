// nodus try JOB: reruns a finished job with the fix its diagnosis names first, where nodus can
// apply it without touching the script (the DataLoader's knobs, set by the Python hook: see
// --loader), for a short steady window (--measure, 60 s by default), and prints the two runs side
// by side with whether the fix paid, by how much and whether that is beyond what one run varies.
// A fix that is a change to the code (preprocess once, move syncs out of the step) is named and
// not pretended: nothing runs. The measured payoff is kept with the first job, and `show` quotes
// it under the diagnosis.

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "core/cost.h"
#include "core/error.h"
#include "core/parse.h"
#include "core/secret.h"
#include "core/strings.h"
#include "core/text.h"
#include "store/job_stats.h"
#include "sweep/compare.h"
#include "telemetry/diagnosis.h"
#include "telemetry/pyhook.h"

namespace nodus::cli {
namespace {

// What the rerun changes: --loader knobs or --tf32, and the same in words.
struct Fix {
  std::string rule;
  std::vector<std::string> knobs;
  bool tf32 = false;
  std::string text;

  // The flags that make the same change by hand.
  std::string flags() const {
    std::string out = knobs.empty() ? "" : "--loader " + join(knobs, ",");
    if (tf32) out += std::string(out.empty() ? "" : " ") + "--tf32";
    return out;
  }
};

// The num_workers of the job's driving DataLoader, as the hook saw it.
std::optional<int> driver_workers(const nlohmann::json& stats) {
  if (!stats.contains("loaders") || !stats["loaders"].is_array()) return std::nullopt;
  for (const auto& l : stats["loaders"])
    if (l.is_object() &&
        l.value("name", nlohmann::json()) == stats.value("loader_driver", nlohmann::json()) &&
        l.contains("workers") && l["workers"].is_number_integer())
      return l["workers"].get<int>();
  return std::nullopt;
}

Fix fix_for(const JobRecord& job, const nlohmann::json& stats) {
  const std::string id = "job " + std::to_string(job.id);
  if (!stats.contains("findings") || !stats["findings"].is_array() || stats["findings"].empty())
    throw Fatal(id + " has no finding to try (nodus show " + std::to_string(job.id) +
                " shows its diagnosis)");
  const auto& top = stats["findings"][0];
  Fix fix;
  fix.rule = top.value("rule", std::string());
  const auto workers = driver_workers(stats);
  if (fix.rule == "loader-main" || (fix.rule == "loader-starved" && workers == 0)) {
    // The first of the "try 4, 8, 16" the finding names.
    fix.knobs = {"num_workers=4"};
    fix.text = "num_workers 0 -> 4";
  } else if (fix.rule == "loader-starved" && workers) {
    fix.knobs = {"num_workers=" + std::to_string(2 * *workers)};
    fix.text = "num_workers " + std::to_string(*workers) + " -> " + std::to_string(2 * *workers);
  } else if (fix.rule == "trace-fp32") {
    // The finding's fix (bf16 autocast) is a change to the code; TF32 for the same FP32 math
    // is a switch nodus's hook can set from outside, and the first thing to try.
    fix.tf32 = true;
    fix.text = "TF32 for FP32 matmuls and convolutions";
    return fix;
  } else if (fix.rule == "loader-starved") {
    throw Fatal(id +
                ": loader-starved, but its num_workers is not known (the hook did not see "
                "its DataLoader): run it with nodus sweep --loader num_workers=4,8,16");
  } else {
    throw Fatal(id + "'s first finding is " + fix.rule + ", whose fix is a change to the code (" +
                top.value("fix", std::string("see nodus show")) +
                "): nodus does not make it for you; nothing was run");
  }
  if (job.gpu_count > 0) {
    fix.knobs.push_back("pin_memory=true");  // batches copied to the GPU from pinned memory
    fix.text += ", pin_memory=true";
  }
  return fix;
}

std::string ms_text(int64_t ms) { return std::to_string(ms) + "ms"; }

// A dollar figure as text that parses back to the same double: a tiny cap stays above 0.
std::string exact_text(double usd) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", usd);
  return buf;
}

// The first job's flags again, with the fix's knobs over its own and the --measure window.
RunFlags rerun_flags(const JobRecord& job, const Fix& fix, const std::string& measure) {
  for (const auto& arg : job.argv)
    if (arg.find(kRedacted) != std::string::npos)
      throw Fatal("job " + std::to_string(job.id) +
                  "'s command held a credential nodus did not keep: rerun it yourself with "
                  "nodus run " +
                  fix.flags());
  RunFlags f;
  f.command = job.argv;
  f.gpu = gpu_flag_value(job);
  if (job.max_cost) f.max_cost = exact_text(*job.max_cost);
  if (job.timeout_ms) f.timeout = ms_text(*job.timeout_ms);
  f.grace = ms_text(job.grace_ms);
  for (const auto& [k, v] : job.env) {
    if (v.find(kRedacted) != std::string::npos)
      throw Fatal("job " + std::to_string(job.id) +
                  "'s environment held a secret nodus did not "
                  "keep (" +
                  k + "): rerun it yourself with nodus run " + fix.flags());
    if (k.rfind("NODUS_", 0) == 0 || k == "CUDA_VISIBLE_DEVICES" || k == "NVIDIA_VISIBLE_DEVICES")
      continue;  // nodus's own, set again for the rerun
    f.env.push_back(k + "=" + v);
  }
  f.workdir = job.workdir;
  f.image = job.image;
  f.backend = job.backend;
  if (job.gpu_count > 0) f.rate = exact_text(job.rate_per_gpu_hour);  // billed as the first was
  const auto& o = *job.options;
  if (o.contains("sample_interval_ms"))
    f.sample_interval = ms_text(o["sample_interval_ms"].get<int64_t>());
  f.metric_regex = o.value("metric_regex", std::vector<std::string>{});
  f.throughput = o.value("throughput", std::string("samples_per_sec"));
  f.warmup = o.value("warmup", std::string("5s"));
  if (o.contains("cpus_per_gpu")) f.cpus_per_gpu = o["cpus_per_gpu"].get<int>();
  if (o.contains("log_limit") && o["log_limit"].is_number_unsigned()) {
    const uint64_t limit = o["log_limit"].get<uint64_t>();
    f.log_limit = limit == 0 ? "none" : std::to_string(limit);
  }
  // The job's own knobs, then the fix's, which win.
  std::map<std::string, std::string> knobs;
  if (o.contains("loader") && o["loader"].is_object())
    knobs = o["loader"].get<std::map<std::string, std::string>>();
  for (const auto& k : fix.knobs) knobs[k.substr(0, k.find('='))] = k.substr(k.find('=') + 1);
  for (const auto& [k, v] : knobs) f.loader.push_back(k + "=" + v);
  f.tf32 = fix.tf32 || o.value("tf32", false);
  f.measure = measure;
  return f;
}

struct Figures {
  std::optional<double> throughput, data_wait, util, usd_per_m, idle_usd_per_hour, mfu;
  std::string unit = "samples";  // what throughput counts: "tokens" for a model fed token ids
  bool warmup_only = false;      // the job ended inside its warm-up: no steady figure
};

Figures figures_of(const JobRecord& job, const nlohmann::json& stats) {
  auto num = [&](const char* key) -> std::optional<double> {
    if (stats.contains(key) && stats[key].is_number()) return stats[key].get<double>();
    return std::nullopt;
  };
  Figures f;
  f.throughput = num("throughput");
  f.data_wait = num("data_wait_share");
  f.util = num("util_mean");
  if (stats.value("throughput_metric", std::string()) == "tokens_per_sec") f.unit = "tokens";
  if (stats.contains("mfu") && stats["mfu"].is_object() && stats["mfu"].contains("value") &&
      stats["mfu"]["value"].is_number())
    f.mfu = stats["mfu"]["value"].get<double>();
  f.warmup_only = stats.value("instrumented_phase", std::string()) == "warm-up only";
  const double per_second = usd_per_second(job.gpu_count, job.rate_per_gpu_hour);
  if (f.throughput && *f.throughput > 0 && per_second > 0)
    f.usd_per_m = per_second / *f.throughput * 1e6;
  if (auto idle = num("idle_usd");
      idle && job.started_at && job.ended_at && *job.ended_at > *job.started_at)
    f.idle_usd_per_hour = *idle / ((*job.ended_at - *job.started_at) / 3600);
  return f;
}

std::string fixed_text(std::optional<double> v, const char* format) {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

// "2.41x", or "-" when either side is missing.
std::string ratio_text(std::optional<double> before, std::optional<double> after) {
  if (!before || !after || *before <= 0) return "-";
  return fixed_text(*after / *before, "%.2fx");
}

// Whether the fix paid, on throughput, in one sentence; `pays`: true, false, or unset when it
// cannot be judged.
std::string verdict_of(const Figures& before, const Figures& after, const Fix& fix,
                       std::optional<bool>& pays) {
  if (!before.throughput || !after.throughput || *before.throughput <= 0 || before.warmup_only ||
      after.warmup_only)
    return "not judged: " +
           std::string(!before.throughput || before.warmup_only ? "the first" : "the rerun") +
           " job has no steady throughput to compare" +
           (before.warmup_only || after.warmup_only ? " (it ended inside its warm-up)" : "");
  const double r = *after.throughput / *before.throughput;
  const std::string margin = fixed_text(100 * sweep::kSingleRunMargin, "%.0f") + "%";
  std::string out;
  if (r >= 1 + sweep::kSingleRunMargin) {
    pays = true;
    out = "the fix pays: " + fixed_text(r, "%.2f") + "x the throughput with " + fix.text +
          ", beyond the " + margin + " one run can vary";
  } else if (r > 1 - sweep::kSingleRunMargin) {
    pays = false;
    out = "the fix does not pay: " + fixed_text(r, "%.2f") + "x the throughput with " + fix.text +
          ", within the " + margin + " one run can vary";
  } else {
    pays = false;
    out = "the fix costs throughput: " + fixed_text(r, "%.2f") + "x with " + fix.text;
  }
  if (fix.tf32)
    out +=
        "; TF32 rounds the products' inputs to 10-bit mantissas (check the loss), and the "
        "finding's own fix, bf16 autocast, is a change to the code";
  if (!fix.knobs.empty() && after.data_wait && *after.data_wait > telemetry::kDataWaitHigh)
    out += "; the data wait is still " + fixed_text(100 * *after.data_wait, "%.0f") +
           "%: try more (nodus sweep --loader num_workers=4,8,16 names the smallest that works)";
  return out;
}

// While it lives, stdout goes to stderr: the rerun's own output must not mix with the
// comparison on stdout (json: only json).
class StdoutToStderr {
 public:
  StdoutToStderr() {
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    if (saved_ < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      const int err = errno;
      if (saved_ >= 0) ::close(saved_);
      throw Fatal(std::string("cannot send the rerun's output to stderr: ") + std::strerror(err));
    }
  }
  ~StdoutToStderr() {
    std::fflush(stdout);
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
  }
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_ = -1;
};

struct TryCommand {
  std::string id;
  std::string measure = "60s";
  std::string format = "table";

  int operator()() const {
    Format f = format_from(format);
    value_or_throw(parse_duration(measure, "--measure"));
    auto store = open_store();
    reconcile_to_read(*store);
    auto job = store->find_job(id);
    if (!job) throw Fatal("unknown job '" + escape_control(id) + "': see nodus ps -a");
    const std::string name = "job " + std::to_string(job->id);
    if (!is_final(job->state))
      throw Fatal(name + " is still " + std::string(to_string(job->state)) +
                  ": nodus try reruns a job that has ended");
    auto stats = store->stats(job->id);
    const nlohmann::json before_stats = stats ? stats->values : nlohmann::json::object();
    const Fix fix = fix_for(*job, before_stats);
    RunFlags flags = rerun_flags(*job, fix, measure);
    std::fprintf(stderr, "nodus: trying %s's first finding (%s): %s, for %s of steady state\n",
                 name.c_str(), fix.rule.c_str(), fix.text.c_str(), measure.c_str());
    int64_t rerun_id = 0;
    int rc = 0;
    {
      StdoutToStderr rerun_output;
      rc = run_attached(flags, &rerun_id);
    }
    auto rerun = store->job(rerun_id);
    if (!rerun) throw Fatal("the rerun of " + name + " left no record");
    auto rerun_stats_row = store->stats(rerun->id);
    const nlohmann::json after_stats =
        rerun_stats_row ? rerun_stats_row->values : nlohmann::json::object();

    const Figures before = figures_of(*job, before_stats), after = figures_of(*rerun, after_stats);
    std::optional<bool> pays;
    std::string verdict =
        rerun->state == JobState::kCompleted
            ? verdict_of(before, after, fix, pays)
            : "not judged: the rerun ended " + std::string(to_string(rerun->state));
    nlohmann::json tried = {
        {"job", rerun->id},
        {"rule", fix.rule},
        {"fix", fix.text},
        {"loader", fix.knobs},
        {"tf32", fix.tf32},
        {"throughput_ratio", before.throughput && after.throughput && *before.throughput > 0
                                 ? nlohmann::json(*after.throughput / *before.throughput)
                                 : nlohmann::json()},
        {"pays", pays ? nlohmann::json(*pays) : nlohmann::json()},
        {"verdict", verdict}};
    store->put_stats({job->id, {{"tried", tried}}});

    Table t({{"figure", "FIGURE"},
             {"before", "JOB " + std::to_string(job->id), true},
             {"after", "JOB " + std::to_string(rerun->id) + " (FIX)", true},
             {"change", "CHANGE", true}});
    auto row = [&](const std::string& figure, std::optional<double> b, std::optional<double> a,
                   const char* format, double scale, bool ratio) {
      auto scaled = [&](std::optional<double> v) {
        return v ? std::optional<double>(*v * scale) : std::nullopt;
      };
      t.add_row({figure, fixed_text(scaled(b), format), fixed_text(scaled(a), format),
                 ratio ? ratio_text(b, a) : ""},
                {{"figure", figure},
                 {"before", b ? nlohmann::json(*b) : nlohmann::json()},
                 {"after", a ? nlohmann::json(*a) : nlohmann::json()},
                 {"change", b && a && *b > 0 ? nlohmann::json(*a / *b) : nlohmann::json()}});
    };
    row("throughput (" + before.unit + "/s)", before.throughput, after.throughput, "%.4g", 1, true);
    row("data wait (%)", before.data_wait, after.data_wait, "%.0f", 100, false);
    row("GPU util (%)", before.util, after.util, "%.0f", 1, false);
    row("MFU (%)", before.mfu, after.mfu, "%.3g", 100, false);
    row("$/M " + before.unit, before.usd_per_m, after.usd_per_m, "%.4g", 1, true);
    row("idle $/hour", before.idle_usd_per_hour, after.idle_usd_per_hour, "%.4g", 1, true);
    if (f == Format::kJson) {
      print(dump_json({{"schema_version", kSchemaVersion},
                       {"job", job->id},
                       {"rerun", rerun->id},
                       {"rule", fix.rule},
                       {"fix", fix.text},
                       {"loader", fix.knobs},
                       {"tf32", fix.tf32},
                       {"figures", t.raw_rows()},
                       {"pays", tried["pays"]},
                       {"verdict", verdict}}) +
            "\n");
    } else {
      print(t.render(f));
      if (f != Format::kCsv) print("\n" + verdict + "\n");
    }
    return rerun->state == JobState::kCompleted ? 0 : rc;
  }
};

}  // namespace

Command add_try(CLI::App& app) {
  auto cmd = std::make_shared<TryCommand>();
  CLI::App* sub = app.add_subcommand(
      "try", "rerun a finished job with its first finding's fix and say whether it paid");
  set_examples(sub, {"nodus try 42", "nodus try 42 --measure 2m --format json"});
  sub->add_option("id", cmd->id, "job id or name")->type_name("JOB")->required();
  sub->add_option("--measure", cmd->measure,
                  "how long the rerun runs in steady state (after its warm-up)")
      ->type_name("DURATION")
      ->capture_default_str();
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
