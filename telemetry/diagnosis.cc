#include "telemetry/diagnosis.h"

#include <algorithm>
#include <cstdio>

#include "core/strings.h"
#include "telemetry/util_series.h"

namespace nodus::telemetry {
namespace {

std::string fixed(double v, const char* fmt) {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string data_wait_text(const Summary& s) {
  if (!s.data_wait_share) return "data wait not reported";
  double dw = *s.data_wait_share;
  std::string text = "data wait " + format_percent(dw * 100);
  if (dw > kDataWaitHigh) return text + " > " + format_percent(kDataWaitHigh * 100);
  if (dw < kDataWaitNearZero) return text + " (near 0)";
  return text;
}

std::string util_text(const Summary& s) {
  if (!s.util_mean) return "no GPU data";
  return "GPU util " + format_percent(*s.util_mean);
}

std::string cpu_text(const Summary& s) {
  return "CPU " + format_percent(*s.cpu_saturation * 100) + " of " + std::to_string(*s.cores) +
         (*s.cores == 1 ? " core" : " cores");
}

Finding loader_finding(const Summary& s, bool data_wait_high) {
  std::vector<std::string> ev = {data_wait_text(s), util_text(s)};
  if (s.sawtooth && *s.sawtooth >= kSawtoothHigh)
    ev.push_back("sawtooth " + fixed(*s.sawtooth, "%.2f"));
  const bool host = s.cpu_saturation && s.cores;
  const double busiest = s.max_process_cpu.value_or(0);
  if (data_wait_high && host && *s.cpu_saturation >= kCpuSaturated) {
    ev.push_back(cpu_text(s));
    return {"cpu-bound",
            "cpu-bound",
            "workers running, cores saturated: decoding or augmentation is CPU-bound",
            "preprocess once (store decoded, resized data) or move transforms to the GPU; more "
            "workers will not help",
            join(ev, ", "),
            false,
            0.9};
  }
  if (data_wait_high && host && *s.cpu_saturation < kCpuIdle && busiest < kProcessBusy) {
    ev.push_back(cpu_text(s));
    ev.push_back("busiest process " + format_percent(busiest) + " of a core");
    return {"io-bound",
            "io-bound",
            "CPU mostly idle, batches still late: reading from storage",
            "copy the dataset to local disk (or memory) first",
            join(ev, ", "),
            false,
            0.85};
  }
  if (host) ev.push_back(cpu_text(s));
  if (host && busiest >= kProcessBusy)
    ev.push_back("busiest process " + format_percent(busiest) + " of a core");
  return {"loader-starved",
          "loader-starved",
          "loader starved (loading in the main process, or too few workers)",
          "raise num_workers (try 4, 8, 16), pin_memory=True, persistent_workers=True, "
          "prefetch_factor",
          join(ev, ", "),
          false,
          data_wait_high ? 0.9 : 0.6};
}

Finding launch_finding(const Summary& s, bool near_zero) {
  std::string ev = "steady " + util_text(s) + " (sd " + fixed(*s.util_stddev, "%.0f") + "), " +
                   data_wait_text(s);
  return {"launch-bound",
          "launch-bound",
          "small batch or kernel launch overhead",
          "larger batch, torch.compile (mode=\"reduce-overhead\" uses CUDA graphs)",
          ev,
          false,
          near_zero ? 0.8 : 0.5};
}

Finding sync_finding(const Summary& s, bool near_zero, double score) {
  std::vector<std::string> ev = {data_wait_text(s), util_text(s)};
  if (s.util_stddev) ev.push_back("sd " + fixed(*s.util_stddev, "%.0f"));
  if (s.idle_fraction && *s.idle_fraction > 0)
    ev.push_back("idle " + format_percent(*s.idle_fraction * 100) + " of samples");
  return {"sync-bound",
          "gpu-idle-in-step",
          "the GPU idles inside the step: host-device syncs (.item(), .cpu(), print of CUDA "
          "tensors, Python if on CUDA values)",
          "accumulate on the device and log every N steps; confirm with torch.profiler "
          "(aten::item, cudaStreamSynchronize)",
          join(ev, ", "),
          false,
          score};
}

}  // namespace

std::vector<Finding> diagnose(const Summary& s) {
  std::vector<Finding> out;
  const auto& dw = s.data_wait_share;
  const bool dw_high = dw && *dw > kDataWaitHigh;
  const bool dw_near_zero = dw && *dw < kDataWaitNearZero;
  const bool low_util = s.util_mean && *s.util_mean < kLowUtil;
  const bool sawtooth = s.sawtooth && *s.sawtooth >= kSawtoothHigh;

  // A sawtooth with low utilization points at the loader unless data wait says otherwise.
  const bool loader = dw_high || (low_util && sawtooth && !dw_near_zero);
  if (loader) {
    out.push_back(loader_finding(s, dw_high));
  } else if (low_util) {
    const double util = *s.util_mean;
    const bool steady = s.util_stddev && *s.util_stddev <= kSteadyStddev && !sawtooth;
    if (steady && util >= kLaunchUtilLow && util <= kLaunchUtilHigh) {
      out.push_back(launch_finding(s, dw_near_zero));
      // Syncs can look the same at one-second sampling: a profile tells them apart.
      out.push_back(sync_finding(s, dw_near_zero, 0.3));
    } else {
      out.push_back(sync_finding(s, dw_near_zero, dw_near_zero ? 0.7 : 0.4));
    }
  }
  if (s.util_mean && *s.util_mean >= kBusyUtil) {
    out.push_back({"busy", "ok", "GPU busy",
                   "nothing to fix for idling; if steps are still slow, torch.autocast with "
                   "bf16 (Tensor Cores) and sizes in multiples of 8",
                   util_text(s), true, 0.1});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.score > b.score; });
  return out;
}

std::string verdict(const Summary& s) {
  auto findings = diagnose(s);
  if (!findings.empty()) return findings.front().verdict;
  return s.util_mean ? "ok" : "no-gpu-data";
}

std::string format_finding(const Finding& f) {
  return f.evidence + ": " + f.cause + " -> " + f.fix;
}

}  // namespace nodus::telemetry
