#include "telemetry/summary.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "telemetry/util_series.h"

namespace nodus::telemetry {
namespace {

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double stddev(const std::vector<double>& v, double m) {
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size()));
}

double sawtooth_score(const std::vector<double>& u) {
  int jumps = 0;
  for (size_t i = 1; i < u.size(); ++i) {
    bool down = u[i - 1] > kSawHigh && u[i] < kSawLow;
    bool up = u[i - 1] < kSawLow && u[i] > kSawHigh;
    if (down || up) ++jumps;
  }
  return jumps / static_cast<double>(u.size() - 1);
}

void summarize_gpu(const std::vector<GpuSample>& samples, Summary& s) {
  std::vector<double> u;
  for (const auto& p : util_series(samples)) u.push_back(p.util);
  std::set<int> gpus;
  for (const auto& g : samples) gpus.insert(g.gpu_index);
  s.n_gpus = static_cast<int>(gpus.size());
  s.n_samples = static_cast<int>(u.size());
  if (u.empty()) return;
  s.util_mean = mean(u);
  s.util_median = median(u);
  s.util_stddev = stddev(u, *s.util_mean);
  s.idle_fraction = std::count_if(u.begin(), u.end(), [](double x) { return x < kIdleUtil; }) /
                    static_cast<double>(u.size());
  if (u.size() >= 2) s.sawtooth = sawtooth_score(u);
}

void summarize_host(const std::vector<HostSample>& host, Summary& s) {
  s.n_host_samples = static_cast<int>(host.size());
  if (host.empty()) return;
  std::vector<double> cpu, saturation;
  int cores = 0;
  double max_process = 0;
  for (const auto& h : host) {
    cpu.push_back(h.cpu_percent);
    saturation.push_back(h.cpu_percent / (std::max(h.cores, 1) * 100.0));
    cores = std::max(cores, h.cores);
    max_process = std::max(max_process, h.max_process_cpu_percent);
  }
  s.cpu_percent_mean = mean(cpu);
  s.cpu_saturation = mean(saturation);
  s.cores = cores;
  s.max_process_cpu = max_process;
}

void summarize_data_wait(std::vector<MetricPoint> metrics, Summary& s) {
  std::stable_sort(metrics.begin(), metrics.end(),
                   [](const MetricPoint& a, const MetricPoint& b) { return a.t < b.t; });
  std::vector<double> waits;
  for (const auto& m : metrics)
    if (m.name == "data_wait" && std::isfinite(m.value)) waits.push_back(m.value);
  s.n_data_wait = static_cast<int>(waits.size());
  if (waits.empty()) return;
  if (waits.size() > 1) waits.erase(waits.begin());
  s.data_wait_share = mean(waits);
}

template <typename T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <typename T>
void get(const nlohmann::json& j, const char* key, std::optional<T>& v) {
  auto it = j.find(key);
  if (it != j.end() && it->is_number()) v = it->get<T>();
}

template <typename T>
void get(const nlohmann::json& j, const char* key, T& v) {
  auto it = j.find(key);
  if (it != j.end() && it->is_number()) v = it->get<T>();
}

}  // namespace

Summary summarize(const SummaryInput& in) {
  Summary s;
  s.cost = in.cost;
  s.wall_s = in.wall_s;
  summarize_gpu(in.gpu, s);
  summarize_host(in.host, s);
  summarize_data_wait(in.metrics, s);
  if (s.util_mean) s.idle_usd = in.cost * (1.0 - *s.util_mean / 100.0);
  return s;
}

void to_json(nlohmann::json& j, const Summary& s) {
  j = nlohmann::json::object();
  put(j, "util_mean", s.util_mean);
  put(j, "util_median", s.util_median);
  put(j, "util_stddev", s.util_stddev);
  put(j, "idle_fraction", s.idle_fraction);
  put(j, "sawtooth", s.sawtooth);
  j["n_samples"] = s.n_samples;
  j["n_gpus"] = s.n_gpus;
  put(j, "cpu_percent_mean", s.cpu_percent_mean);
  put(j, "cores", s.cores);
  put(j, "cpu_saturation", s.cpu_saturation);
  put(j, "max_process_cpu", s.max_process_cpu);
  j["n_host_samples"] = s.n_host_samples;
  put(j, "data_wait_share", s.data_wait_share);
  j["n_data_wait"] = s.n_data_wait;
  j["cost"] = s.cost;
  j["wall_s"] = s.wall_s;
  put(j, "idle_usd", s.idle_usd);
}

void from_json(const nlohmann::json& j, Summary& s) {
  s = Summary{};
  if (!j.is_object()) return;
  get(j, "util_mean", s.util_mean);
  get(j, "util_median", s.util_median);
  get(j, "util_stddev", s.util_stddev);
  get(j, "idle_fraction", s.idle_fraction);
  get(j, "sawtooth", s.sawtooth);
  get(j, "n_samples", s.n_samples);
  get(j, "n_gpus", s.n_gpus);
  get(j, "cpu_percent_mean", s.cpu_percent_mean);
  get(j, "cores", s.cores);
  get(j, "cpu_saturation", s.cpu_saturation);
  get(j, "max_process_cpu", s.max_process_cpu);
  get(j, "n_host_samples", s.n_host_samples);
  get(j, "data_wait_share", s.data_wait_share);
  get(j, "n_data_wait", s.n_data_wait);
  get(j, "cost", s.cost);
  get(j, "wall_s", s.wall_s);
  get(j, "idle_usd", s.idle_usd);
}

}  // namespace nodus::telemetry
