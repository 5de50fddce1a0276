#include "engine/observer.h"

#include <chrono>
#include <cstdio>

#include "core/parse.h"
#include "engine/measure.h"
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
constexpr double kFlushEvery = 5.0;  // seconds between batched writes of series
}

struct JobObserver::Impl {
  store::Store& store;
  SuperviseOptions options;
  bool attach;
  int64_t job_id = 0;
  std::unique_ptr<telemetry::GpuSampler> gpu;
  std::string gpu_note;
  std::unique_ptr<telemetry::HostSampler> host;
  pid_t host_pid = 0;  // the host sampler starts at the first tick: a short job never scans /proc
  std::optional<telemetry::UtilPolicy> policy;
  std::optional<std::string> low_util;
  std::unique_ptr<sweep::MetricsFileReader> metrics;
  std::vector<sweep::MetricRegex> regexes;
  std::unique_ptr<Measurement> measure;  // phases, the Python hook's figures, I/O evidence
  std::vector<GpuSample> gpu_buffer;
  std::vector<HostSample> host_buffer;
  std::vector<MetricPoint> metric_buffer;
  double last_flush = 0;

  Impl(store::Store& s, const SuperviseOptions& o, bool a) : store(s), options(o), attach(a) {
    // Checked by the CLI before the job was created; a spec that no longer parses is dropped.
    if (auto parsed = sweep::parse_metric_regexes(o.metric_regexes)) regexes = std::move(*parsed);
  }

  void flush() {
    if (job_id == 0) return;
    if (!gpu_buffer.empty()) store.add_gpu_samples(job_id, gpu_buffer);
    if (!host_buffer.empty()) store.add_host_samples(job_id, host_buffer);
    if (!metric_buffer.empty()) store.add_metrics(job_id, metric_buffer);
    gpu_buffer.clear();
    host_buffer.clear();
    metric_buffer.clear();
    last_flush = unix_now();
  }

  void read_metrics(bool last) {
    if (!metrics) return;
    auto points = last ? metrics->finish(unix_now()) : metrics->poll(unix_now());
    metric_buffer.insert(metric_buffer.end(), points.begin(), points.end());
  }
};

JobObserver::JobObserver(store::Store& store, const SuperviseOptions& options, bool attach)
    : impl_(std::make_unique<Impl>(store, options, attach)) {}

JobObserver::~JobObserver() = default;

void JobObserver::on_started(const JobRecord& job) {
  Impl& m = *impl_;
  m.job_id = job.id;
  m.last_flush = unix_now();
  if (!job.metrics_path.empty())
    m.metrics = std::make_unique<sweep::MetricsFileReader>(job.metrics_path);
  m.measure = std::make_unique<Measurement>(
      m.options, job.options.value("instrumentation", nlohmann::json::object()));
  m.measure->on_started(job);
  if (job.backend != "local") return;
  if (job.gpu_count > 0) {
    m.gpu = telemetry::make_gpu_sampler(static_cast<int>(m.options.sample_interval.count()),
                                        &m.gpu_note);
    if (!m.gpu && m.attach) std::fprintf(stderr, "nodus: %s\n", m.gpu_note.c_str());
  }
  if (m.options.min_util && m.gpu)
    m.policy.emplace(*m.options.min_util, m.options.util_window,
                     job.started_at.value_or(unix_now()));
  if (!job.backend_id.empty()) m.host_pid = std::stoi(job.backend_id);
}

void JobObserver::on_line(std::string_view line) {
  Impl& m = *impl_;
  if (m.regexes.empty()) return;
  auto points = sweep::extract_metrics(m.regexes, line, unix_now());
  m.metric_buffer.insert(m.metric_buffer.end(), points.begin(), points.end());
}

void JobObserver::tick(const JobRecord& job) {
  Impl& m = *impl_;
  if (m.gpu) {
    auto samples = m.gpu->poll(job.gpu_indices);
    if (m.policy) {
      m.policy->add(samples);
      if (!m.low_util) m.low_util = m.policy->check(unix_now());
    }
    m.gpu_buffer.insert(m.gpu_buffer.end(), samples.begin(), samples.end());
  }
  if (m.host) {
    m.host_buffer.push_back(m.host->sample());
  } else if (m.host_pid > 0) {
    m.host = std::make_unique<telemetry::HostSampler>(m.host_pid);  // the baseline
  }
  m.read_metrics(false);
  if (m.measure) {
    auto points = m.measure->tick(unix_now());
    m.metric_buffer.insert(m.metric_buffer.end(), points.begin(), points.end());
  }
  if (unix_now() - m.last_flush >= kFlushEvery) m.flush();
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
  auto hook_points = m.measure->finish(unix_now());
  m.metric_buffer.insert(m.metric_buffer.end(), hook_points.begin(), hook_points.end());
  m.flush();

  telemetry::SummaryInput in;
  in.gpu = m.store.gpu_samples(job.id);
  in.host = m.store.host_samples(job.id);
  in.metrics = m.store.metrics(job.id);
  in.cost = job.cost;
  in.wall_s = job.started_at && job.ended_at ? *job.ended_at - *job.started_at : 0;
  Conclusion conclusion = m.measure->conclude(job, in);
  const telemetry::Summary& summary = conclusion.summary;
  nlohmann::json stats = summary;
  stats.update(conclusion.stats);
  auto throughput = conclusion.throughput;
  if (throughput) stats["throughput"] = *throughput;
  stats["throughput_metric"] = m.options.throughput_metric;
  if (m.metrics) {
    const auto& counts = m.metrics->stats();
    stats["metrics_lines"] = counts.lines;
    std::string problems = sweep::describe(counts);
    if (!problems.empty()) stats["metrics_note"] = problems;
  }
  if (m.gpu)
    stats["gpu_source"] = m.gpu->source();
  else if (!m.gpu_note.empty())
    stats["gpu_note"] = m.gpu_note;
  auto findings = telemetry::diagnose(summary, conclusion.evidence);
  stats["verdict"] = telemetry::verdict(summary, conclusion.evidence);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : findings)
    list.push_back({{"rule", f.rule},
                    {"verdict", f.verdict},
                    {"cause", f.cause},
                    {"fix", f.fix},
                    {"evidence", f.evidence},
                    {"signals", f.signals},
                    {"note", f.note}});
  stats["findings"] = list;
  m.store.put_stats({job.id, stats});

  std::string line;
  if (summary.util_mean)
    line = "GPU util " + telemetry::format_percent(*summary.util_mean) + ", idle " +
           format_usd(summary.idle_usd.value_or(0)) + " of " + format_usd(job.cost);
  if (auto phases = conclusion.stats.find("phases"); phases != conclusion.stats.end())
    line += (line.empty() ? "" : "; ") + phases->value("text", std::string());
  if (!findings.empty() && !findings.front().note)
    line += (line.empty() ? "" : "; ") + telemetry::format_finding(findings.front());
  return line;
}

}  // namespace nodus::engine
