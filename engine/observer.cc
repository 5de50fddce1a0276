#include "engine/observer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "backend/local/cgroup.h"
#include "backend/local/cpuset.h"
#include "core/error.h"
#include "core/parse.h"
#include "engine/measure.h"
#include "engine/series_source.h"
#include "store/job_stats.h"
#include "sweep/metric_flood.h"
#include "sweep/metric_regex.h"
#include "sweep/metrics.h"
#include "telemetry/diagnosis.h"
#include "telemetry/gpu_sampler.h"
#include "telemetry/host_sampler.h"
#include "telemetry/summary.h"
#include "telemetry/util_policy.h"
#include "telemetry/util_series.h"

namespace nodus::engine {
namespace {

// What the job controls (its output lines, its NODUS_METRICS file) is processed within a budget
// per sampling tick, scaled to the interval, so a flood costs the supervisor a bounded amount
// of time and memory per tick; what is over budget is counted, never queued.
// A training job reports a few lines a second; these leave it a hundredfold margin, and cost the
// supervisor a few milliseconds per tick at most (a JSON line is ~5 us to parse, a regex scan of
// a short line well under 1 us).
constexpr double kRegexLinesPerSecond = 20'000;   // output lines scanned by --metric-regex
constexpr double kRegexBytesPerSecond = 2 << 20;  // ... and their bytes
constexpr double kFileBytesPerSecond = 64 << 10;  // NODUS_METRICS bytes parsed (~1,400 lines)
constexpr size_t kMaxGpuSamplesPerTick = 4096;    // a sampler gone wrong cannot flood the store

uint64_t per_tick(double per_second, double interval_s, uint64_t at_least) {
  return std::max<uint64_t>(at_least, static_cast<uint64_t>(per_second * interval_s));
}

}  // namespace

struct JobObserver::Impl {
  store::Store& store;
  SuperviseOptions options;
  bool attach;
  int64_t job_id = 0;
  std::unique_ptr<telemetry::GpuSampler> gpu;
  std::string gpu_note;
  std::unique_ptr<telemetry::HostSampler> host;
  pid_t host_pid = 0;  // the host sampler starts at the first tick: a short job never scans /proc
  std::string host_cgroup;  // the job's cgroup, as its record names it ("" when none)
  std::optional<telemetry::UtilPolicy> policy;
  std::optional<std::string> low_util;
  std::unique_ptr<sweep::MetricsFileReader> metrics;
  bool metrics_refusal_told = false;
  bool store_refusal_told = false;
  std::vector<sweep::MetricRegex> regexes;

  // Per tick: the budget for output lines, and what is waiting to be written.
  uint64_t line_budget = 0, byte_budget = 0;
  uint64_t lines_this_tick = 0, bytes_this_tick = 0;
  std::unique_ptr<Measurement> measure;  // phases, the Python hook's figures, I/O evidence
  std::vector<GpuSample> gpu_buffer;
  std::vector<HostSample> host_buffer;
  sweep::MetricCoalescer coalescer;

  // Job-lifetime counters. The summary is built at the end from the stored series, streamed
  // (finish()), so nothing here grows with the job's length.
  uint64_t lines_scanned = 0, lines_unscanned = 0, malformed_values = 0, gpu_dropped = 0;

  Impl(store::Store& s, const SuperviseOptions& o, bool a) : store(s), options(o), attach(a) {
    // Checked by the CLI before the job was created; a spec that no longer parses is dropped.
    if (auto parsed = sweep::parse_metric_regexes(o.metric_regexes)) regexes = std::move(*parsed);
    double interval_s = std::chrono::duration<double>(o.sample_interval).count();
    line_budget = per_tick(kRegexLinesPerSecond, interval_s, 1000);
    byte_budget = per_tick(kRegexBytesPerSecond, interval_s, 64 << 10);
  }

  // A point the job reported: checked, offered for storage.
  void take_point(const MetricPoint& p) {
    if (!sweep::plausible_metric(p, options.throughput_metric)) {
      ++malformed_values;
      return;
    }
    coalescer.add(p);
  }

  void read_metrics(bool last) {
    if (!metrics) return;
    auto points = last ? metrics->finish(unix_now()) : metrics->poll(unix_now());
    for (const auto& p : points) take_point(p);
    if (metrics->stats().stopped && !metrics_refusal_told && attach) {
      std::fprintf(stderr, "nodus: %s\n", metrics->stats().note.c_str());
      metrics_refusal_told = true;
    }
  }

  // One transaction per tick: the heartbeat and what the tick produced (bounded above).
  void write(double now) {
    if (job_id == 0) return;
    store::Store::SeriesBatch batch;
    batch.heartbeat = now;
    batch.gpu.swap(gpu_buffer);
    batch.host.swap(host_buffer);
    batch.metrics = coalescer.take();
    // A store that refuses the write (a full disk) loses this tick's samples, not the job: the
    // caps are enforced from the supervisor's memory. Said once.
    try {
      store.write_tick(job_id, batch);
    } catch (const Fatal& e) {
      if (!store_refusal_told && attach)
        std::fprintf(stderr,
                     "nodus: cannot write the store (%s): the job goes on under its caps; its "
                     "samples are dropped until the store can take them\n",
                     e.what());
      store_refusal_told = true;
    }
    lines_this_tick = 0;
    bytes_this_tick = 0;
  }

  // What the job reported and what of it was sampled, coalesced or refused, and where its GPU
  // figures came from, into its stats (`nodus show`).
  void add_metrics_report(nlohmann::json& stats) const {
    const auto& kept = coalescer.stats();
    nlohmann::json reported = {{"points", kept.seen},
                               {"stored", kept.kept},
                               {"coalesced", kept.coalesced},
                               {"dropped", kept.dropped_names + kept.dropped_store},
                               {"malformed_values", malformed_values}};
    if (!regexes.empty()) {
      reported["lines_scanned"] = lines_scanned;
      reported["lines_unscanned"] = lines_unscanned;
    }
    std::vector<std::string> notes;
    if (metrics) {
      const auto& counts = metrics->stats();
      stats["metrics_lines"] = counts.lines;
      reported["file_malformed_lines"] = counts.malformed;
      reported["file_skipped_bytes"] = counts.skipped_bytes;
      std::string problems = sweep::describe(counts);
      if (!problems.empty()) notes.push_back(problems);
    }
    if (lines_unscanned)
      notes.push_back(std::to_string(lines_unscanned) +
                      " output lines over the per-tick scan budget not matched by --metric-regex");
    if (malformed_values)
      notes.push_back(std::to_string(malformed_values) +
                      " malformed values ignored (fractions outside 0..1, throughput <= 0)");
    if (std::string c = sweep::describe(kept); !c.empty()) notes.push_back(c);
    if (gpu_dropped)
      notes.push_back(std::to_string(gpu_dropped) + " GPU samples over the per-tick limit dropped");
    std::string note;
    for (const auto& n : notes) note += (note.empty() ? "" : "; ") + n;
    if (!note.empty()) stats["metrics_note"] = note;
    stats["metrics"] = reported;
    if (gpu)
      stats["gpu_source"] = gpu->source();
    else if (!gpu_note.empty())
      stats["gpu_note"] = gpu_note;
  }
};

JobObserver::JobObserver(store::Store& store, const SuperviseOptions& options, bool attach)
    : impl_(std::make_unique<Impl>(store, options, attach)) {}

JobObserver::~JobObserver() = default;

void JobObserver::on_started(const JobRecord& job) {
  Impl& m = *impl_;
  m.job_id = job.id;
  m.write(unix_now());  // the first heartbeat: a supervisor killed now bills nothing past it
  if (!job.metrics_path.empty()) {
    sweep::MetricsLimits limits;
    // Bounded per poll (a flood is sampled: newest bytes kept, the rest counted) instead of in
    // total: the coalescer bounds what is stored, so reading need never stop for good.
    limits.max_total_bytes = std::numeric_limits<uint64_t>::max();
    limits.max_points = std::numeric_limits<uint64_t>::max();
    limits.max_poll_bytes =
        per_tick(kFileBytesPerSecond,
                 std::chrono::duration<double>(m.options.sample_interval).count(), 64 << 10);
    m.metrics = std::make_unique<sweep::MetricsFileReader>(job.metrics_path, limits);
  }
  m.measure = std::make_unique<Measurement>(
      m.options, job.options->value("instrumentation", nlohmann::json::object()));
  m.measure->on_started(job);
  if (job.backend != "local") return;
  if (job.gpu_count > 0) {
    m.gpu = telemetry::make_gpu_sampler(static_cast<int>(m.options.sample_interval.count()),
                                        &m.gpu_note);
    if (!m.gpu && m.attach) std::fprintf(stderr, "nodus: %s\n", m.gpu_note.c_str());
  }
  if (m.options.min_util && m.gpu) {
    m.policy.emplace(*m.options.min_util, m.options.util_window,
                     job.started_at.value_or(unix_now()));
  } else if (m.options.min_util && job.gpu_count > 0) {
    // Said, not left to be found out: the job runs on without the stop it asked for.
    const std::string why = "--min-util is not enforced: no GPU utilization to watch";
    if (m.attach) std::fprintf(stderr, "nodus: %s\n", why.c_str());
    m.gpu_note += (m.gpu_note.empty() ? "" : "; ") + why;
  }
  if (!job.backend_id.empty()) m.host_pid = std::stoi(job.backend_id);
  m.host_cgroup = backend::local::cgroup_from_note(job.note);
}

void JobObserver::on_line(std::string_view line) {
  Impl& m = *impl_;
  if (m.regexes.empty()) return;
  // Over this tick's budget the line is counted, not scanned: matching is the costly part.
  if (m.lines_this_tick >= m.line_budget || m.bytes_this_tick >= m.byte_budget) {
    ++m.lines_unscanned;
    return;
  }
  ++m.lines_this_tick;
  m.bytes_this_tick += line.size();
  ++m.lines_scanned;
  for (const auto& p : sweep::extract_metrics(m.regexes, line, unix_now())) m.take_point(p);
}

void JobObserver::tick(const JobRecord& job) {
  Impl& m = *impl_;
  if (m.gpu) {
    auto samples = m.gpu->poll(job.gpu_indices);
    if (m.policy) {
      m.policy->add(samples);
      if (!m.low_util) m.low_util = m.policy->check(unix_now());
    }
    size_t room = kMaxGpuSamplesPerTick - std::min(kMaxGpuSamplesPerTick, m.gpu_buffer.size());
    if (samples.size() > room) {
      m.gpu_dropped += samples.size() - room;
      samples.resize(room);
    }
    m.gpu_buffer.insert(m.gpu_buffer.end(), samples.begin(), samples.end());
  }
  if (m.host) {
    m.host_buffer.push_back(m.host->sample());
  } else if (m.host_pid > 0) {
    m.host = std::make_unique<telemetry::HostSampler>(m.host_pid, telemetry::make_proc_reader(),
                                                      std::nullopt, m.host_cgroup);  // baseline
  }
  m.read_metrics(false);
  if (m.measure)
    for (const auto& p : m.measure->tick(unix_now())) m.coalescer.add(p);
  m.write(unix_now());
}

std::optional<std::string> JobObserver::low_util_reason() const { return impl_->low_util; }

std::optional<std::string> JobObserver::measured_reason() const {
  return impl_->measure ? impl_->measure->measured(unix_now()) : std::nullopt;
}

std::string JobObserver::finish(const JobRecord& job) {
  Impl& m = *impl_;
  m.job_id = job.id;
  m.read_metrics(true);
  if (!m.measure) m.measure = std::make_unique<Measurement>(m.options, nlohmann::json::object());
  for (const auto& p : m.measure->finish(unix_now())) m.coalescer.add(p);
  m.write(unix_now());

  // The series are read back row by row, never whole (engine/series_source.h): the figures are
  // those of the stored series, the steady state's start is only known now, and memory stays
  // flat in the job's length.
  double wall_s = job.started_at && job.ended_at ? *job.ended_at - *job.started_at : 0;
  auto series = store_series(m.store, job.id);
  Conclusion conclusion = m.measure->conclude(job, *series, job.cost, wall_s);
  const telemetry::Summary& summary = conclusion.summary;
  nlohmann::json stats = summary;
  stats.update(conclusion.stats);
  if (conclusion.throughput) stats["throughput"] = *conclusion.throughput;
  stats["throughput_metric"] = conclusion.throughput_metric.empty() ? m.options.throughput_metric
                                                                    : conclusion.throughput_metric;

  m.add_metrics_report(stats);
  auto findings = telemetry::diagnose(summary, conclusion.evidence);
  stats["verdict"] = telemetry::verdict(summary, conclusion.evidence);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : findings) {
    list.push_back({{"rule", f.rule},
                    {"verdict", f.verdict},
                    {"cause", f.cause},
                    {"fix", f.fix},
                    {"evidence", f.evidence},
                    {"signals", f.signals},
                    {"note", f.note}});
    if (f.usd) list.back()["usd"] = *f.usd;
  }
  // More DataLoader workers than the CPUs the job was given (backend/local/cpuset.h): a note in
  // `show`, and in the sweep table's VERDICT.
  const int cpus = job.options->value("cpus", 0);
  if (auto workers = backend::local::workers_over_cpus(stats.value("loaders", nlohmann::json()),
                                                       stats.value("loader_driver", ""), cpus)) {
    list.push_back({{"rule", "workers-over-cpus"},
                    {"verdict", "workers>cpus"},
                    {"cause", "its loader workers take turns on its cores"},
                    {"fix", "fewer workers, a larger --cpus-per-gpu, or fewer cells side by side"},
                    {"evidence", "num_workers=" + std::to_string(*workers) + " > its " +
                                     std::to_string(cpus) + " CPUs"},
                    {"signals", nlohmann::json::array({"cpu"})},
                    {"note", true}});
    stats["verdict"] = stats["verdict"].get<std::string>() + " (workers>cpus)";
  }
  stats["findings"] = list;
  try {
    m.store.put_stats({job.id, stats});
  } catch (const Fatal&) {
    // A full disk: the figures are lost, the outcome is kept by the supervisor (its caller).
  }

  std::string line;
  if (summary.util_mean)
    line = "GPU util " + format_percent(*summary.util_mean) + ", idle " +
           format_usd(summary.idle_usd.value_or(0)) + " of " + format_usd(job.cost);
  if (auto phases = conclusion.stats.find("phases"); phases != conclusion.stats.end())
    line += (line.empty() ? "" : "; ") + phases->value("text", std::string());
  if (!findings.empty() && !findings.front().note)
    line += (line.empty() ? "" : "; ") + telemetry::format_finding(findings.front());
  return line;
}

}  // namespace nodus::engine
