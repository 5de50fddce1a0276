#include "engine/measure.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend/local/cgroup.h"
#include "core/cost.h"
#include "core/json_input.h"
#include "core/parse.h"
#include "core/proc.h"
#include "sweep/metrics.h"
#include "telemetry/diagnosis.h"
#include "telemetry/io_evidence.h"
#include "telemetry/pyhook.h"
#include "telemetry/steady_accumulator.h"
#include "telemetry/summary_accumulator.h"
#include "telemetry/trace_reader.h"

namespace nodus::engine {
namespace {

namespace fs = std::filesystem;
constexpr uintmax_t kMaxStateBytes = 1 << 20;  // a state file larger than this is not read
constexpr std::string_view kHookPrefix = "hook.r";

// "auto-3.jsonl" -> 3; "loaders-3.json" -> 3.
std::optional<int> rank_of(const std::string& name, std::string_view prefix,
                           std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoi(digits);
}

std::optional<nlohmann::json> read_state(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec || size > kMaxStateBytes) return std::nullopt;
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  auto j = parse_untrusted_json(text.str());  // the job writes this file
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::optional<double> number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

// The mean of a metric's points at or after `from`; without `from`, or when every point came
// before it, the mean after the first report (which covers start-up): sweep::steady_mean's rule.
// Fed in time order, one point at a time.
class JobMean {
 public:
  JobMean(std::string name, std::optional<double> from) : name_(std::move(name)), from_(from) {}
  void add(const MetricPoint& p) {
    if (p.name != name_) return;
    all_.add(p.t, p.value);
    if (from_ && p.t >= *from_) sum_ += p.value, ++n_;
  }
  std::optional<double> value() const {
    if (n_ == 0) return all_.value();
    return sum_ / static_cast<double>(n_);
  }

 private:
  std::string name_;
  std::optional<double> from_;
  double sum_ = 0;
  int64_t n_ = 0;
  telemetry::SteadyMean all_;
};

// The cgroup v2 folder a process is in (its "0::" line under the cgroup2 mount), or nullopt.
std::optional<std::string> job_cgroup_dir(pid_t pid) {
  auto mountinfo = read_small_file("/proc/self/mountinfo");
  auto mount = mountinfo ? backend::local::cgroup2_mount(*mountinfo) : std::nullopt;
  auto own = read_small_file("/proc/" + std::to_string(pid) + "/cgroup");
  auto path = own ? backend::local::unified_path(*own) : std::nullopt;
  if (!mount || !path || *path == "/") return std::nullopt;
  return *mount + *path;
}

// The hook's look at the loop's thread over the profiled steps (its "lines"): the function
// outside the step that took the most of it, when it took at least 1%.
std::string top_outside(const nlohmann::json& meta) {
  if (!meta.contains("lines") || !meta["lines"].is_object()) return "";
  const auto& functions = meta["lines"].value("functions", nlohmann::json::array());
  if (!functions.is_array() || functions.empty() || !functions[0].is_object()) return "";
  const auto& f = functions[0];
  const double share = f.value("share", 0.0);
  if (!(share >= 0.01)) return "";
  return f.value("function", std::string("?")) + " at " + f.value("site", std::string("?")) + " (" +
         format_percent(100 * share) + " of the step)";
}

// The lowest rank's profile (profile-<rank>.json, trace-<rank>.json in the hook's folder): the
// trace's facts for the diagnosis, and what `show` and `report` print.
nlohmann::json read_profile(const std::string& dir, telemetry::Evidence& evidence) {
  nlohmann::json p = {{"schedule", kProfileSchedule}};
  std::optional<int> rank;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (auto r = rank_of(entry.path().filename().string(), "profile-", ".json"))
      if (!rank || *r < *rank) rank = r;
  if (!rank) {
    p["note"] = "no profile: the loop ran too few DataLoader batches and optimizer steps (or none)";
    return p;
  }
  auto meta = read_state(fs::path(dir) / ("profile-" + std::to_string(*rank) + ".json"));
  if (meta) p["meta"] = *meta;
  if (meta) evidence.top_outside = top_outside(*meta);
  std::string trace = (fs::path(dir) / ("trace-" + std::to_string(*rank) + ".json")).string();
  if (!fs::exists(trace, ec)) {
    p["note"] = meta ? meta->value("why", std::string("no trace written")) : "no trace written";
    return p;
  }
  p["trace"] = trace;
  p["trace_bytes"] = fs::file_size(trace, ec);
  auto facts = telemetry::read_trace_file(trace);
  if (!facts) {
    p["note"] = facts.error().message;
    return p;
  }
  p.update(facts->to_json());
  evidence.trace = std::move(*facts);
  return p;
}

}  // namespace

bool is_hook_metric(std::string_view name) { return name.rfind(kHookPrefix, 0) == 0; }

std::string hook_dir(const JobRecord& job) {
  std::string base = job.metrics_path;
  if (base.size() > 6 && base.compare(base.size() - 6, 6, ".jsonl") == 0)
    base.resize(base.size() - 6);
  return base + ".hook";
}

nlohmann::json prepare_instrumentation(const JobRecord& job, const SuperviseOptions& options,
                                       std::map<std::string, std::string>& env) {
  auto off = [](std::string why) { return nlohmann::json{{"on", false}, {"why", why}}; };
  if (!telemetry::runs_python(job.argv)) return off("not a Python command");
  if (!options.instrument) return off("--no-instrument");
  // A cluster's job finds the hook in the folder its nodes share with nodus, which a
  // container on a cluster node does not see.
  if (job.backend != "local" && !job.image.empty())
    return off("a " + job.backend + " job in a container is not instrumented");
  if (job.metrics_path.empty()) return off("no job folder");
  if (auto why = telemetry::python_ignores_hook(job.argv)) return off(*why);
  std::string dir = hook_dir(job);
  // A cluster's job writes it itself, as the job's user (backend/slurm/job_script.h).
  if (job.backend == "local")
    if (auto written = telemetry::write_pyhook(dir); !written)
      return off("could not write the hook: " + written.error().message);
  std::string rest;
  if (auto it = env.find("PYTHONPATH"); it != env.end())
    rest = it->second;
  else if (const char* own = std::getenv("PYTHONPATH"))
    rest = own;
  env["PYTHONPATH"] = rest.empty() ? dir : dir + ":" + rest;
  env["NODUS_HOOK_DIR"] = dir;
  if (!options.loader.empty()) env["NODUS_LOADER"] = telemetry::loader_env(options.loader);
  if (options.tf32) env["NODUS_TF32"] = "1";
  // The hook reads batches ("20") or seconds ("5s"): "1m" and "500ms" reach it as seconds.
  auto warmup = telemetry::parse_warmup(options.warmup);
  if (warmup && warmup->seconds) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%gs", *warmup->seconds);
    env["NODUS_WARMUP"] = buf;
  } else {
    env["NODUS_WARMUP"] = options.warmup;
  }
  nlohmann::json on = {{"on", true},
                       {"why", "Python job: DataLoader iteration timed by nodus's hook"}};
  if (options.profile) {
    env["NODUS_PROFILE"] = kProfileSchedule;
    on["profile"] = kProfileSchedule;
  }
  return on;
}

void HookAccumulator::add(const MetricPoint& p) {
  if (p.name.rfind(kHookPrefix, 0) != 0) return;
  auto dot = p.name.find('.', kHookPrefix.size());
  if (dot == std::string::npos) return;
  int rank = std::atoi(p.name.c_str() + kHookPrefix.size());
  std::string_view field = std::string_view(p.name).substr(dot + 1);
  auto it = steady_t_.find(rank);
  // The line written when warm-up ended carries t == steady_t and is warm-up's.
  bool is_steady = it != steady_t_.end() && p.t > it->second + 1e-6;
  for (Sums* a : {&all_[rank], is_steady ? &steady_[rank] : nullptr}) {
    if (!a) continue;
    if (field == "samples_per_sec") a->sps += p.value, ++a->n_sps;
    if (field == "data_wait") a->dw += p.value, ++a->n_dw;
    if (field == "step_time") a->st += p.value, ++a->n_st;
    if (field == "tokens_per_sec") a->tps += p.value, ++a->n_tps;
    if (field == "steps_per_sec") a->stps += p.value, ++a->n_stps;
    if (field == "interval_s") a->span += p.value;
    if (field == "n_steps") a->steps += p.value;
    if (field == "n_samples") a->samples += p.value;
    if (field == "n_tokens") a->tokens += p.value;
    if (field == "outside_s") a->outside += p.value;
  }
}

Instrumented HookAccumulator::finish() const {
  Instrumented out;
  bool any_steady = false;
  for (const auto& [rank, a] : steady_) any_steady = any_steady || a.n_sps > 0;
  const auto& use = any_steady ? steady_ : all_;
  out.steady = any_steady;
  double dw = 0, st = 0, stps = 0;
  int n_dw = 0, n_st = 0, n_stps = 0;
  for (const auto& [rank, a0] : use) {
    if (a0.n_sps == 0) continue;
    Sums a = a0;
    if (a.span > 0 && a.steps > 0) {  // totals: one "mean" of each, over the whole span
      a.sps = a.samples / a.span, a.n_sps = 1;
      a.st = a.span / a.steps, a.n_st = 1;
      a.dw = std::min(1.0, a.outside / a.span), a.n_dw = 1;
      a.stps = a.steps / a.span, a.n_stps = 1;
      if (a.tokens > 0) a.tps = a.tokens / a.span, a.n_tps = 1;
    }
    ++out.ranks;
    RankFigures& r = out.per_rank[rank];
    r.samples_per_sec = a.sps / a.n_sps;
    out.samples_per_sec = out.samples_per_sec.value_or(0) + r.samples_per_sec;
    if (a.n_dw) r.data_wait = a.dw / a.n_dw, dw += *r.data_wait, ++n_dw;
    if (a.n_st) r.step_time = a.st / a.n_st, st += *r.step_time, ++n_st;
    if (a.n_tps) {
      r.tokens_per_sec = a.tps / a.n_tps;
      out.tokens_per_sec = out.tokens_per_sec.value_or(0) + *r.tokens_per_sec;
    }
    if (a.n_stps) {
      r.steps_per_sec = a.stps / a.n_stps;
      stps += *r.steps_per_sec, ++n_stps;
    }
  }
  if (n_stps) out.steps_per_sec = stps / n_stps;
  if (n_dw) out.data_wait = dw / n_dw;
  if (n_st) out.step_time = st / n_st;
  return out;
}

nlohmann::json model_flops_utilization(const std::map<int, nlohmann::json>& states,
                                       const std::map<int, RankFigures>& per_rank,
                                       const nlohmann::json& job_options,
                                       const std::string& gpu_type, double usd_per_hour) {
  double achieved = 0;  // FLOP/s over the ranks that counted theirs
  int ranks = 0;
  std::optional<double> per_step;
  std::string precision, counter;
  for (const auto& [rank, state] : states) {
    if (!state.contains("flops") || !state["flops"].is_object()) continue;
    const auto& f = state["flops"];
    auto flops = number(f, "per_step");
    auto it = per_rank.find(rank);
    if (!flops || *flops <= 0 || it == per_rank.end() || !it->second.steps_per_sec) continue;
    if (!per_step) {
      per_step = *flops;
      precision = f.value("precision", std::string());
      counter = f.value("counter", std::string());
    }
    achieved += *flops * *it->second.steps_per_sec;
    ++ranks;
  }
  if (!per_step) return nullptr;
  nlohmann::json m = {{"flops_per_step", *per_step},
                      {"achieved_tflops", achieved / 1e12},
                      {"ranks", ranks},
                      {"precision", precision},
                      {"counter", counter}};
  const nlohmann::json peak = job_options.value("peak_tflops", nlohmann::json());
  if (!peak.is_object() || !(peak.value("bf16", 0.0) > 0)) {
    m["note"] = job_options.contains("peak_tflops") || !gpu_type.empty()
                    ? "no dense peak in the catalog for this GPU type: MFU needs one"
                    : "no GPU peak to divide by: the job had no GPU with a peak in the catalog";
    return m;
  }
  const double bf16 = peak["bf16"].get<double>() * 1e12;
  const double mfu = achieved / (ranks * bf16);
  m["value"] = mfu;
  m["peak_tflops"] = peak["bf16"];
  m["peak_of"] = "bf16";
  m["gpu_type"] = peak.value("type", std::string());
  m["peak_source"] = peak.value("source", std::string());
  // Against the peak of the precision the matmuls ran in, where the catalog has it.
  const std::string at = precision == "fp16" ? "bf16" : precision;
  if (at != "bf16" && peak.value(at, 0.0) > 0)
    m["value_at_precision"] = achieved / (ranks * peak[at].get<double>() * 1e12);
  if (usd_per_hour > 0) m["unused_usd_per_hour"] = usd_per_hour * std::max(0.0, 1 - mfu);
  return m;
}

namespace {

// Ranks in step (each waits for the others at the gradient all-reduce inside its step) where
// one lags by its data: the rank longest outside its step (its loader, its own fetch) sets the
// pace, and each other rank waits at the sync for what it spent less outside. Under the one
// assumption the host's timings allow, that the ranks' compute is alike, a rank's own work per
// step is its step less that wait. The rank with the most, 10% above the others' median, with
// its ratio and the share of each step the others wait; nullopt when a rank lacks a step time
// or data wait, or none stands out. (A rank slow in its compute is not told apart: the others
// wait for it inside the all-reduce, where from the host their wait looks like compute.)
struct Lag {
  int rank = 0;
  double own_s = 0, ratio = 0, others_wait = 0;
};
std::optional<Lag> lagging_in_step(const std::map<int, RankFigures>& per_rank) {
  double least_inside = std::numeric_limits<double>::infinity();
  for (const auto& [rank, f] : per_rank) {
    if (!f.step_time || !f.data_wait || !(*f.step_time > 0)) return std::nullopt;
    least_inside = std::min(least_inside, *f.step_time * (1 - *f.data_wait));
  }
  std::map<int, double> own, waited;
  for (const auto& [rank, f] : per_rank) {
    waited[rank] = *f.step_time * (1 - *f.data_wait) - least_inside;
    own[rank] = *f.step_time - waited[rank];
  }
  auto top = std::max_element(own.begin(), own.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<double> others;
  double wait_share = 0;
  for (const auto& [rank, o] : own) {
    if (rank == top->first) continue;
    others.push_back(o);
    wait_share += waited[rank] / *per_rank.at(rank).step_time;
  }
  std::sort(others.begin(), others.end());
  const size_t n = others.size();
  const double median = n % 2 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2;
  if (!(median > 0) || top->second < 1.1 * median) return std::nullopt;
  return Lag{top->first, top->second, top->second / median, wait_share / n};
}

}  // namespace

SlowestRank slowest_rank(const std::map<int, RankFigures>& per_rank,
                         const std::map<int, std::string>& node_by_rank, bool steps) {
  SlowestRank out;
  if (per_rank.size() < 2) return out;
  auto name = [&](int rank) {
    auto node = node_by_rank.find(rank);
    return "rank " + std::to_string(rank) +
           (node != node_by_rank.end() && !node->second.empty() ? " (" + node->second + ")" : "");
  };
  auto by_tp = [](const auto& a, const auto& b) {
    return a.second.samples_per_sec < b.second.samples_per_sec;
  };
  auto slow = std::min_element(per_rank.begin(), per_rank.end(), by_tp);
  auto fast = std::max_element(per_rank.begin(), per_rank.end(), by_tp);
  char buf[512];
  const double fastest = fast->second.samples_per_sec;
  if (fastest > 0 && slow->second.samples_per_sec < 0.95 * fastest) {
    std::snprintf(buf, sizeof buf, "%s is slowest: %s samples/s against %s on %s",
                  name(slow->first).c_str(),
                  format_throughput(slow->second.samples_per_sec).c_str(),
                  format_throughput(fastest).c_str(), name(fast->first).c_str());
    out.rank = slow->first;
    out.text = buf;
    return out;
  }
  if (auto lag = lagging_in_step(per_rank)) {
    const RankFigures& f = per_rank.at(lag->rank);
    std::snprintf(buf, sizeof buf,
                  "%s's own work per step (%.1f ms) is %.1fx the other ranks' median; they "
                  "wait %.0f%% of each step for it at the gradient sync. It waits on %s (%s "
                  "%.0f%%)",
                  name(lag->rank).c_str(), 1000 * lag->own_s, lag->ratio, 100 * lag->others_wait,
                  steps ? "its batch fetch outside the step" : "its DataLoader",
                  steps ? "outside its step" : "data wait", 100 * *f.data_wait);
    out.rank = lag->rank;
    out.text = buf;
    out.own_ratio = lag->ratio;
    out.others_wait = lag->others_wait;
    return out;
  }
  std::optional<int> most, least;
  bool timed = false;
  for (const auto& [rank, f] : per_rank) {
    if (!f.data_wait) continue;
    timed = timed || f.step_time;
    if (!most || *f.data_wait > *per_rank.at(*most).data_wait) most = rank;
    if (!least || *f.data_wait < *per_rank.at(*least).data_wait) least = rank;
  }
  if (!timed && most && *per_rank.at(*most).data_wait - *per_rank.at(*least).data_wait > 0.05) {
    std::snprintf(buf, sizeof buf,
                  "ranks in step (throughput within 5%%); %s %s: %.0f%% against "
                  "%.0f%% on %s, and the others wait for it at each gradient sync",
                  name(*most).c_str(),
                  steps ? "spends longest outside its step (fetching its batch, logging, Python)"
                        : "waits longest for data",
                  100 * *per_rank.at(*most).data_wait, 100 * *per_rank.at(*least).data_wait,
                  name(*least).c_str());
    out.rank = most;
    out.text = buf;
    return out;
  }
  out.text = timed  ? "no rank lags by its data: throughput within 5%, each rank's time outside "
                      "its step within a tenth of the others'; a rank slow in its compute is not "
                      "seen from the host (the others wait for it inside the gradient sync)"
             : most ? "no rank lags: throughput within 5%, data wait within 5 points"
                    : "no rank lags: throughput within 5%";
  return out;
}

Instrumented aggregate_hook_points(const std::vector<MetricPoint>& points,
                                   const std::map<int, double>& steady_t_by_rank) {
  HookAccumulator acc(steady_t_by_rank);
  for (const auto& p : points) acc.add(p);
  return acc.finish();
}

struct Measurement::Impl {
  SuperviseOptions options;
  nlohmann::json status;
  std::optional<telemetry::Warmup> warmup;
  std::string dir;
  double started_at = 0;
  std::map<int, std::unique_ptr<sweep::MetricsFileReader>> readers;
  std::map<int, nlohmann::json> states;
  std::unique_ptr<telemetry::IoTracker> io;
  bool io_rebased = false;
  std::optional<double> steady_t;  // rank 0's (or the lowest rank's), as seen while running

  bool on() const { return status.value("on", false); }

  std::vector<MetricPoint> rename(int rank, std::vector<MetricPoint> points) {
    std::string prefix = std::string(kHookPrefix) + std::to_string(rank) + ".";
    for (auto& p : points) p.name = prefix + p.name;
    return points;
  }

  std::vector<MetricPoint> read(double now, bool last) {
    std::vector<MetricPoint> out;
    if (!on()) return out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string name = entry.path().filename().string();
      if (auto rank = rank_of(name, "auto-", ".jsonl")) {
        auto& r = readers[*rank];
        if (!r) r = std::make_unique<sweep::MetricsFileReader>(entry.path().string());
      } else if (auto srank = rank_of(name, "loaders-", ".json")) {
        if (auto j = read_state(entry.path())) states[*srank] = std::move(*j);
      }
    }
    for (auto& [rank, r] : readers) {
      auto points = rename(rank, last ? r->finish(now) : r->poll(now));
      out.insert(out.end(), points.begin(), points.end());
    }
    if (!states.empty()) {
      const auto& first = states.begin()->second;
      if (auto t = number(first, "steady_t")) steady_t = *t;
    }
    return out;
  }
};

Measurement::Measurement(const SuperviseOptions& options, nlohmann::json status)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->status = std::move(status);
  impl_->warmup = telemetry::parse_warmup(options.warmup);  // checked by the CLI
  if (!impl_->warmup) impl_->warmup = telemetry::parse_warmup("5s");
}

Measurement::~Measurement() = default;

void Measurement::on_started(const JobRecord& job) {
  Impl& m = *impl_;
  m.dir = hook_dir(job);
  m.started_at = job.started_at.value_or(unix_now());
  if (job.backend == "local" && !job.backend_id.empty()) {
    pid_t pid = std::stoi(job.backend_id);
    // The job's cgroup as its record names it: with --image the main process is the engine's
    // client, outside it, and the container's processes are inside.
    const std::string cgroup = backend::local::cgroup_from_note(job.note);
    m.io = std::make_unique<telemetry::IoTracker>(pid, telemetry::make_proc_reader(), cgroup);
    if (!cgroup.empty())
      m.io->watch_cgroup(cgroup);
    else if (auto dir = job_cgroup_dir(pid))
      m.io->watch_cgroup(*dir);
  }
}

std::vector<MetricPoint> Measurement::tick(double now) {
  Impl& m = *impl_;
  auto points = m.read(now, false);
  if (m.io) {
    m.io->sample();
    // Storage reads count from the steady state on (or from launch + warm-up without a hook).
    double from = m.steady_t.value_or(m.started_at + m.warmup->seconds.value_or(0));
    if (!m.io_rebased && (m.steady_t || (!m.on() && now >= from))) {
      m.io->rebase();
      m.io_rebased = true;
    }
  }
  return points;
}

std::optional<std::string> Measurement::measured(double now) const {
  const Impl& m = *impl_;
  if (!m.options.measure) return std::nullopt;
  double window = static_cast<double>(m.options.measure->count()) / 1000.0;
  std::optional<double> from = m.steady_t;
  // Without the hook there is no first-batch evidence: count from launch plus the warm-up.
  if (!m.on() && m.warmup) from = m.started_at + m.warmup->seconds.value_or(0);
  if (!from || now < *from + window) return std::nullopt;
  return "measured " + format_duration(*m.options.measure) + " of steady state, then stopped";
}

std::vector<MetricPoint> Measurement::finish(double now) { return impl_->read(now, true); }

namespace {

// What the hook wrote per rank: each rank's steady start, and from the lowest rank the job's
// phases, what --loader and --tf32 did, its loaders and the driving loader's num_workers.
void read_hook_states(const std::map<int, nlohmann::json>& states, telemetry::Phases& phases,
                      std::map<int, double>& steady_by_rank, Conclusion& c) {
  if (states.empty()) return;
  nlohmann::json loaders = nlohmann::json::array();
  for (const auto& [rank, state] : states) {
    if (auto t = number(state, "steady_t")) steady_by_rank[rank] = *t;
    if (!phases.first_batch_t) {  // the lowest rank's phases describe the job
      phases.first_batch_t = number(state, "first_batch_t");
      phases.steady_t = number(state, "steady_t");
      if (phases.first_batch_t) phases.source = "instrumented";
    }
    if (rank == states.begin()->first && state.contains("overrides"))
      c.stats["loader_overrides"] = state["overrides"];  // --loader: what the hook did
    if (rank == states.begin()->first && state.contains("math"))
      c.stats["math_overrides"] = state["math"];  // --tf32: what the hook did
    if (rank == states.begin()->first) {
      // What drove the loop (its first event): DataLoader batches or optimizer steps.
      if (state.contains("mode") && state["mode"].is_string())
        c.evidence.loop_source = state["mode"].get<std::string>();
      if (state.contains("steps") && state["steps"].is_object())
        c.stats["optimizer_steps"] = state["steps"];
    }
    if (rank == states.begin()->first && state.contains("loaders")) {
      loaders = state["loaders"];
      if (state.contains("driver") && state["driver"].is_string())
        c.stats["loader_driver"] = state["driver"];
      // The driving loader's num_workers: 0 means the loop loads its own batches.
      for (const auto& l : loaders)
        if (l.is_object() && state.contains("driver") && l.value("name", "") == state["driver"] &&
            l.contains("workers") && l["workers"].is_number_integer())
          c.evidence.loader_workers = l["workers"].get<int>();
    }
  }
  c.stats["loaders"] = loaders;
  c.stats["ranks"] = states.size();
}

// What the hook timed, now that the loop has run ("why" in the instrumentation's status), and,
// for the diagnosis, what was missing where nothing was timed.
void describe_loop(const nlohmann::json& status, bool no_state, Conclusion& c) {
  if (!status.value("on", false)) {
    c.evidence.unmeasured_why =
        "nodus did not instrument this job (" + status.value("why", std::string("off")) + ")";
    return;
  }
  const std::string& loop = c.evidence.loop_source;
  std::string why;
  if (loop == "loader") {
    why = "Python job: DataLoader iteration timed by nodus's hook";
  } else if (loop == "steps") {
    why = "Python job: optimizer steps timed by nodus's hook (no DataLoader drove the loop)";
  } else {
    why = no_state ? "Python job: nodus's hook saw no DataLoader batch and no torch.optim "
                     "optimizer step"
                   : "Python job: nodus's hook saw the loop start but timed no step";
    c.evidence.unmeasured_why =
        "nodus's hook saw no DataLoader batch and no optimizer step "
        "(torch.optim) in this job";
  }
  c.stats["instrumentation"]["why"] = why;
}

// The job's phases (start-up, warm-up, steady state) and what its start-up cost.
void add_phases(const telemetry::Phases& phases, const JobRecord& job, Conclusion& c) {
  if (!phases.first_batch_t) return;
  c.stats["phases"] = {{"source", phases.source}, {"startup_s", *phases.startup_s()}};
  double rate = usd_per_second(job.gpu_count, job.rate_per_gpu_hour);
  c.stats["phases"]["startup_usd"] = *phases.startup_s() * rate;
  if (phases.steady_t) {
    c.stats["phases"]["warmup_s"] = *phases.warmup_s();
    c.stats["phases"]["steady_s"] = *phases.steady_s();
  }
  c.stats["phases"]["text"] = telemetry::describe_phases(phases, rate);
}

// What the job read from storage, and the CPU's iowait, as evidence and stats.
void add_io(telemetry::IoTracker& tracker, Conclusion& c) {
  auto io = tracker.evidence();
  c.evidence.read_mib_per_s = io.read_mib_per_s();
  c.evidence.iowait_share = io.iowait_share;
  c.evidence.io_source = io.source();
  nlohmann::json j = {{"read_bytes", io.read_bytes}, {"seconds", io.seconds}};
  if (io.cgroup_read_bytes) j["cgroup_read_bytes"] = *io.cgroup_read_bytes;
  if (!io.cgroup_note.empty()) j["cgroup_note"] = io.cgroup_note;
  j["source"] = io.source();
  if (io.iowait_share) j["iowait_share"] = *io.iowait_share;
  j["readable"] = io.readable;
  c.stats["io"] = j;
}

// Each rank's figures and node, and which rank the others wait for.
void add_ranks(const std::map<int, RankFigures>& per_rank,
               const std::map<int, nlohmann::json>& states, Conclusion& c) {
  std::map<int, std::string> nodes;
  for (const auto& [rank, state] : states)
    if (state.contains("node") && state["node"].is_string())
      nodes[rank] = state["node"].get<std::string>();
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [rank, f] : per_rank) {
    nlohmann::json row = {{"rank", rank}, {"samples_per_sec", f.samples_per_sec}};
    if (f.tokens_per_sec) row["tokens_per_sec"] = *f.tokens_per_sec;
    if (auto node = nodes.find(rank); node != nodes.end()) row["node"] = node->second;
    if (f.data_wait) row["data_wait"] = *f.data_wait;
    if (f.step_time) row["step_time"] = *f.step_time;
    rows.push_back(std::move(row));
  }
  c.stats["per_rank"] = std::move(rows);
  SlowestRank slowest = slowest_rank(per_rank, nodes, c.evidence.loop_source == "steps");
  if (slowest.rank) c.stats["slowest_rank"] = *slowest.rank;
  c.stats["ranks_note"] = slowest.text;
  if (slowest.others_wait) {
    c.stats["slowest_rank_own_ratio"] = *slowest.own_ratio;
    c.stats["others_wait_share"] = *slowest.others_wait;
  }
  if (slowest.rank && slowest.others_wait) {
    c.evidence.lagging_rank =
        telemetry::LaggingRank{*slowest.rank, *slowest.own_ratio, *slowest.others_wait};
  }
}

}  // namespace

Conclusion Measurement::conclude(const JobRecord& job, SeriesSource& series, double cost,
                                 double wall_s) const {
  const Impl& m = *impl_;
  Conclusion c;
  c.stats["instrumentation"] = m.status;
  c.stats["warmup"] = m.options.warmup;

  telemetry::Phases phases;
  phases.start_t = job.started_at.value_or(0);
  phases.end_t = job.ended_at.value_or(unix_now());
  std::map<int, double> steady_by_rank;
  read_hook_states(m.states, phases, steady_by_rank, c);
  describe_loop(m.status, m.states.empty(), c);
  // Without the hook, the job's first report shows its loop has run: the start of the
  // warm-up, which then lasts the --warmup seconds.
  const std::string& tp = m.options.throughput_metric;
  if (!phases.first_batch_t) {
    std::vector<std::string> names;
    for (const std::string& n : {tp, std::string("data_wait"), std::string("step_time")})
      if (n.rfind(kHookPrefix, 0) != 0) names.push_back(n);
    if (auto t = series.first_metric_t(names)) {
      phases.first_batch_t = *t;
      phases.source = "job metrics";
    }
    // Batches cannot be counted from the job's reports: only "0" (no warm-up) applies here.
    std::optional<double> warm_s = m.warmup ? m.warmup->seconds : std::nullopt;
    if (m.warmup && m.warmup->batches && *m.warmup->batches == 0) warm_s = 0;
    // No warm-up: every report is steady, also one read only after the job ended.
    if (phases.first_batch_t && warm_s &&
        (*warm_s == 0 || *phases.first_batch_t + *warm_s < phases.end_t))
      phases.steady_t = *phases.first_batch_t + *warm_s;
  }
  add_phases(phases, job, c);

  // One pass over each table, now that the steady state's start is known: the whole job and
  // the steady slice into two accumulators, the job's own means and the hook's per-rank sums
  // alongside (job-reported metrics are those not named hook.r<R>.*). The figures are those of
  // the stored series, as before; reading it row by row keeps memory flat in the job's length.
  std::optional<double> from = phases.steady_t;
  telemetry::SteadyAccumulator acc(from);
  JobMean tp_mean(tp, from), step_mean("step_time", from), per_step("samples_per_step", from),
      data_time("data_time", from);
  HookAccumulator hook_acc(steady_by_rank);
  series.gpu([&](const GpuSample& s) { acc.add_gpu(s); });
  series.host([&](const HostSample& h) { acc.add_host(h); });
  series.metrics([&](const MetricPoint& p) {
    if (p.name.rfind(kHookPrefix, 0) == 0) return hook_acc.add(p);
    acc.add_metric(p);
    for (JobMean* mean : {&tp_mean, &step_mean, &per_step, &data_time}) mean->add(p);
  });
  auto figures = acc.finish(cost, wall_s);
  c.summary = figures.steady;
  if (phases.steady_t && figures.whole.util_mean)
    c.stats["util_mean_job"] = *figures.whole.util_mean;
  c.stats["data_wait_source"] = c.summary.data_wait_share ? "job" : "";

  c.throughput = tp_mean.value();
  std::string tp_source = c.throughput ? "job" : "";
  // A step time with samples per step (e.g. from --metric-regex) gives a throughput, a data
  // time with the step time a data wait.
  auto step = step_mean.value();
  if (!c.throughput && tp == "samples_per_sec" && step && *step > 0) {
    if (auto per = per_step.value()) {
      c.throughput = *per / *step;
      tp_source = "job (samples_per_step / step_time)";
    }
  }
  if (!c.summary.data_wait_share && step && *step > 0) {
    if (auto data = data_time.value()) {
      c.summary.data_wait_share = std::min(1.0, std::max(0.0, *data / *step));
      c.stats["data_wait_source"] = "job (data_time / step_time)";
    }
  }
  Instrumented hook = hook_acc.finish();
  if (hook.samples_per_sec) {
    c.stats["instrumented_throughput"] = *hook.samples_per_sec;
    c.stats["instrumented_phase"] = hook.steady ? "steady" : "warm-up only";
    if (!c.throughput && tp == "samples_per_sec") {
      c.throughput = hook.samples_per_sec;
      tp_source = "instrumented";
    }
  }
  // A model fed token ids: its throughput is tokens/s, unless the job reports its own.
  if (hook.tokens_per_sec) {
    c.stats["instrumented_tokens_per_sec"] = *hook.tokens_per_sec;
    if ((tp_source == "instrumented" || (!c.throughput && tp == "tokens_per_sec"))) {
      c.throughput = hook.tokens_per_sec;
      c.throughput_metric = "tokens_per_sec";
      tp_source = "instrumented";
    }
  }
  if (hook.steps_per_sec) c.stats["instrumented_steps_per_sec"] = *hook.steps_per_sec;
  {
    const double usd_per_hour =
        job.gpu_count > 0 ? 3600 * usd_per_second(job.gpu_count, job.rate_per_gpu_hour) : 0;
    auto mfu =
        model_flops_utilization(m.states, hook.per_rank, *job.options, job.gpu_type, usd_per_hour);
    if (!mfu.is_null()) c.stats["mfu"] = std::move(mfu);
  }
  if (hook.data_wait) {
    c.stats["instrumented_data_wait"] = *hook.data_wait;
    if (!c.summary.data_wait_share) {
      c.summary.data_wait_share = hook.data_wait;
      c.stats["data_wait_source"] = c.evidence.loop_source == "steps"
                                        ? std::string(telemetry::kOutOfStepSource)
                                        : "instrumented";
    }
  }
  if (hook.step_time) c.stats["instrumented_step_time"] = *hook.step_time;
  if (hook.per_rank.size() > 1) add_ranks(hook.per_rank, m.states, c);
  if (!tp_source.empty()) c.stats["throughput_source"] = tp_source;
  c.evidence.data_wait_source = c.stats["data_wait_source"].get<std::string>();

  if (m.on() && m.options.profile) c.stats["profile"] = read_profile(m.dir, c.evidence);

  if (m.io) add_io(*m.io, c);
  return c;
}

}  // namespace nodus::engine
