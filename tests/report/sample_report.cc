#include "sample_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nodus::report::testing {
namespace {

constexpr double kRate = 4.5396;         // USD per H200-hour, the catalog's H200 row
constexpr double kSamplesPerCell = 2e6;  // every cell trains on the same samples
constexpr double kWarmupS = 6;           // start-up: CUDA context, first batches

// Deterministic noise in [0, 1).
struct Noise {
  uint64_t state;
  double next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  }
};

// 1 Hz samples of a loader-bound loop: each period the prefetched batches arrive together, the
// GPU works through them, then waits; a sample is the busy share of its second, as nvidia-smi's
// utilization.gpu is.
std::vector<UtilPoint> util_series(double wall_s, double data_wait, uint64_t seed) {
  Noise noise{seed};
  std::vector<UtilPoint> out;
  const double period = 8;  // seconds between bursts of batches
  const double busy_s = period * (1 - data_wait);
  for (double t = 0; t <= wall_s; t += 1) {
    double util = 2 * noise.next();
    if (t >= kWarmupS) {
      const double into_period = std::fmod(t - kWarmupS, period);
      const double busy = std::clamp(busy_s - into_period, 0.0, 1.0);
      util += busy * (90 + 8 * noise.next());
    }
    out.push_back({t, util});
  }
  return out;
}

Cell demo_cell(int workers, double throughput, double data_wait) {
  Cell c;
  c.label = "num_workers=" + std::to_string(workers);
  c.params = {{"num_workers", std::to_string(workers)}};
  c.status = "completed";
  c.wall_s = std::round(kSamplesPerCell / throughput + kWarmupS);
  c.cost_usd = kRate * c.wall_s / 3600;
  c.throughput = throughput;
  c.usd_per_million = c.cost_usd / (kSamplesPerCell / 1e6);
  c.data_wait = data_wait;
  c.util = util_series(c.wall_s, data_wait, 1000 + workers);
  double sum = 0;
  for (const auto& p : c.util) sum += p.util;
  c.util_mean = sum / c.util.size();
  c.idle_usd = c.cost_usd * (1 - *c.util_mean / 100);
  const std::string wait = std::to_string(static_cast<int>(std::lround(data_wait * 100))) + "%";
  if (workers == 0) {
    c.verdict = "data-starved: batches load in the training process";
    c.diagnosis = {{"DataLoader loads every batch in the main process (num_workers=0)",
                    "set num_workers to 8 or more; add pin_memory=True, persistent_workers=True",
                    "data wait " + wait + " of the loop's time; GPU below 10% most of the run"}};
  } else if (workers < 14) {
    c.verdict = "data-starved: too few loader workers";
    c.diagnosis = {{"too few DataLoader workers for the CPU-side resize and normalize",
                    "raise num_workers (14 cut data wait to 24% in this sweep)",
                    "data wait " + wait + " of the loop's time"}};
  } else {
    c.verdict = "fastest and cheapest per sample; the loader still limits it";
    c.best = true;
    c.diagnosis = {{"the loader is still behind at times: data wait is above 10%",
                    "try prefetch_factor=4, or move resize and normalize to the GPU",
                    "data wait " + wait + " of the loop's time"}};
  }
  return c;
}

}  // namespace

ReportData demo_sweep() {
  ReportData d;
  d.title = "Sweep 3: num_workers for ResNet-18 on H200";
  d.kind = ReportKind::kSweep;
  d.command = {"python", "train.py",      "--arch",        "resnet18", "--batch-size",
               "256",    "--num-workers", "{num_workers}", "--amp",    "bf16"};
  d.grid = {{"num_workers", {"0", "2", "4", "8", "14"}}};
  d.gpu_type = "H200";
  d.gpu_count = 1;
  d.rate_per_gpu_hour = kRate;
  d.created_at = 1794496980;  // 2026-11-12 15:23 UTC
  d.backend = "local";
  d.cells = {demo_cell(0, 1038, 0.95), demo_cell(2, 1503, 0.93), demo_cell(4, 2741, 0.83),
             demo_cell(8, 4953, 0.72), demo_cell(14, 8400, 0.24)};
  d.summary =
      "num_workers=14 is 8.1x faster than num_workers=0 and costs $0.15 per million samples "
      "instead of $1.22; its data wait is still 24%, so the loader remains the bottleneck.";
  double idle = 0;
  for (const auto& c : d.cells) {
    d.totals.cost_usd += c.cost_usd;
    d.totals.wall_s += c.wall_s;  // cells ran one after another
    idle += *c.idle_usd;
  }
  d.totals.idle_usd = idle;
  return d;
}

const std::vector<std::string>& hostile_strings() {
  static const std::vector<std::string> strings = {
      "</script><script>alert(1)</script>",
      "\" onmouseover=\"alert(2)",
      "<img src=x onerror=alert(3)>",
      "' autofocus onfocus='alert(4)",
      "</title></style><svg onload=alert(5)>",
      "<a href=\"javascript:alert(6)\">link</a>",
      "<link rel=stylesheet href=http://evil.example/x.css>",
  };
  return strings;
}

ReportData hostile_sweep() {
  const auto& h = hostile_strings();
  ReportData d = demo_sweep();
  d.title = "Sweep " + h[4];
  d.command = {"python", "train.py", h[0], h[1], "--workers={num_workers}"};
  d.grid = {{h[1], {h[2], "2", "4", "8", h[6]}}};
  d.gpu_type = h[3];
  d.backend = h[5];
  d.throughput_unit = h[2] + "/s";
  d.summary = h[0] + " " + h[6];
  for (size_t i = 0; i < d.cells.size(); ++i) {
    Cell& c = d.cells[i];
    c.label = h[i % h.size()];
    c.params = {{h[1], h[(i + 2) % h.size()]}};
    c.status = i == 1 ? h[3] : c.status;
    c.verdict = h[(i + 4) % h.size()];
    c.diagnosis = {{h[0], h[2], h[5]}};
  }
  return d;
}

}  // namespace nodus::report::testing
