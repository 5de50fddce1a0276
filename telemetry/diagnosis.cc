#include "telemetry/diagnosis.h"

#include <algorithm>
#include <cstdio>

#include "core/parse.h"
#include "core/strings.h"
#include "telemetry/util_series.h"

namespace nodus::telemetry {
namespace {

std::string fixed(double v, const char* fmt) {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A loop driven by optimizer steps has no batch to wait for: its share is the host's time
// outside forward, backward and the optimizer, and is called so.
std::string data_wait_text(const Summary& s, const Evidence& e) {
  if (!s.data_wait_share) return "data wait not reported";
  double dw = *s.data_wait_share;
  std::string text = (e.loop_source == "steps" ? "host time outside the step " : "data wait ") +
                     format_percent(dw * 100);
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

bool io_evidence(const Evidence& e) {
  return (e.read_mib_per_s && *e.read_mib_per_s >= kReadMibHigh) ||
         (e.iowait_share && *e.iowait_share >= kIowaitHigh);
}

std::string io_text(const Evidence& e) {
  std::vector<std::string> parts;
  if (e.read_mib_per_s)
    parts.push_back("storage reads " + fixed(*e.read_mib_per_s, "%.1f") + " MiB/s" +
                    (e.io_source.empty() ? "" : " (" + e.io_source + ")"));
  if (e.iowait_share) parts.push_back("iowait " + format_percent(*e.iowait_share * 100));
  return parts.empty() ? "storage reads unknown" : join(parts, ", ");
}

// Called only with a measured data wait above kDataWaitHigh.
// A loop without a DataLoader whose host work outside the model and optimizer is above the
// line: fetching its own batches, logging, Python.
Finding fetch_finding(const Summary& s, const Evidence& e) {
  std::vector<std::string> ev = {data_wait_text(s, e), util_text(s)};
  if (s.sawtooth && *s.sawtooth >= kSawtoothHigh)
    ev.push_back("sawtooth " + fixed(*s.sawtooth, "%.2f"));
  return {"loop-host-bound",
          "host-bound",
          "the loop's own work between steps (fetching its next batch, logging, Python) holds "
          "the step back: there is no DataLoader to overlap it",
          (e.top_outside.empty() ? std::string() : "first " + e.top_outside + ": ") +
              "fetch the next batch ahead of the step (a DataLoader with num_workers, or a "
              "prefetching thread), copy with pin_memory and non_blocking=True, log every N "
              "steps" +
              (e.top_outside.empty() ? "; --profile names the lines" : ""),
          join(ev, ", "),
          false,
          0.85,
          {"data_wait"},
          std::nullopt};
}

Finding loader_finding(const Summary& s, const Evidence& e) {
  if (e.loop_source == "steps") return fetch_finding(s, e);
  std::vector<std::string> ev = {data_wait_text(s, e), util_text(s)};
  if (s.sawtooth && *s.sawtooth >= kSawtoothHigh)
    ev.push_back("sawtooth " + fixed(*s.sawtooth, "%.2f"));
  const bool host = s.cpu_saturation && s.cores;
  const double busiest = s.max_process_cpu.value_or(0);
  if (e.loader_workers && *e.loader_workers == 0) {
    // The loop loads its own batches: nothing overlaps loading with compute, and busy cores
    // are torch's intra-op threads as much as the loading. Workers come first.
    ev.push_back("DataLoader num_workers=0 (loading in the main process)");
    if (host) ev.push_back(cpu_text(s));
    if (e.read_mib_per_s || e.iowait_share) ev.push_back(io_text(e));
    return {"loader-main",
            "loader-starved",
            "the DataLoader loads in the main process: the GPU waits while the loop loads",
            "num_workers > 0 (try 4, 8, 16), pin_memory=True, persistent_workers=True",
            join(ev, ", "),
            false,
            0.95,
            {"data_wait", "loader"},
            std::nullopt};
  }
  if (host && *s.cpu_saturation >= kCpuSaturated) {
    ev.push_back(cpu_text(s) + " the job may use");
    return {"cpu-bound",
            "cpu-bound",
            "workers running, cores saturated: decoding or augmentation is CPU-bound",
            "preprocess once (store decoded, resized data) or move transforms to the GPU; more "
            "workers will not help",
            join(ev, ", "),
            false,
            0.9,
            {"data_wait", "cpu"},
            std::nullopt};
  }
  if (io_evidence(e)) {
    ev.push_back(io_text(e));
    if (host) ev.push_back(cpu_text(s));
    return {"io-bound",
            "io-bound",
            "batches late while the job reads from storage: the disk feeds the loader",
            "copy the dataset to local disk (or memory) first",
            join(ev, ", "),
            false,
            0.85,
            {"data_wait", "io"},
            std::nullopt};
  }
  std::vector<std::string> signals = {"data_wait"};
  if (host) {
    ev.push_back(cpu_text(s));
    signals.push_back("cpu");
  }
  if (host && busiest >= kProcessBusy)
    ev.push_back("busiest process " + format_percent(busiest) + " of a core");
  if (e.read_mib_per_s || e.iowait_share) ev.push_back(io_text(e));
  return {"loader-starved",
          "loader-starved",
          "loader starved (loading in the main process, or too few workers)",
          "raise num_workers (try 4, 8, 16), pin_memory=True, persistent_workers=True, "
          "prefetch_factor",
          join(ev, ", "),
          false,
          0.9,
          signals,
          std::nullopt};
}

Finding unknown_wait_finding(const Summary& s, const Evidence& e) {
  std::vector<std::string> ev = {util_text(s), "data wait not measured"};
  // What was missing, never "run it under nodus" to a job that was.
  const std::string fix = e.unmeasured_why.empty()
                              ? "report data_wait in NODUS_METRICS"
                              : e.unmeasured_why +
                                    ": report data_wait (or data_time with step_time) in "
                                    "NODUS_METRICS, or --profile to see the steps";
  if (s.sawtooth && *s.sawtooth >= kSawtoothHigh)
    ev.push_back("sawtooth " + fixed(*s.sawtooth, "%.2f"));
  return {"data-wait-unknown",
          "low-util",
          "the GPU is mostly idle; without a data-wait measurement a starved loader, in-step "
          "syncs and a job that does not use the GPU cannot be told apart",
          fix,
          join(ev, ", "),
          false,
          0.5,
          {"gpu_util"},
          std::nullopt};
}

Finding launch_finding(const Summary& s, const Evidence& e, bool near_zero) {
  std::string ev = "steady " + util_text(s) + " (sd " + fixed(*s.util_stddev, "%.0f") + "), " +
                   data_wait_text(s, e);
  return {"launch-bound",
          "launch-bound",
          "small batch or kernel launch overhead",
          "larger batch, torch.compile (mode=\"reduce-overhead\" uses CUDA graphs)",
          ev,
          false,
          near_zero ? 0.8 : 0.5,
          {"gpu_util", "data_wait"},
          std::nullopt};
}

Finding sync_finding(const Summary& s, const Evidence& e, bool near_zero, double score) {
  std::vector<std::string> ev = {data_wait_text(s, e), util_text(s)};
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
          score,
          {"gpu_util", "data_wait"},
          std::nullopt};
}

std::string pct(double share) { return format_percent(share * 100); }

std::string usd_text(double usd, double cost) {
  return "~" + format_usd(usd) + " of the job's " + format_usd(cost);
}

double trace_score(double share) { return 0.5 + 0.34 * std::min(1.0, share * 2); }

// The rows only a CUDA trace can show, each priced at the job's cost.
std::vector<Finding> trace_findings(const Summary& s, const TraceFacts& t) {
  std::vector<Finding> out;
  if (t.syncs_per_step >= 1 && t.idle_sync_share >= kSyncIdleShare && !t.sync_sites.empty()) {
    const SyncSite& top = t.sync_sites.front();
    double per_step = top.count / static_cast<double>(std::max(1, t.steps));
    double each_ms = top.count ? top.gpu_idle_us / top.count / 1000 : 0;
    double usd = t.idle_sync_share * s.cost;
    std::string ev = top.what + " " + fixed(per_step, "%.3g") + " per step" +
                     (top.site.empty() ? "" : " at " + top.site) + ", GPU idle " +
                     fixed(each_ms, "%.3g") + " ms after each (" +
                     pct(each_ms * 1000 * per_step / t.step_us) + " of the step); " +
                     fixed(t.syncs_per_step, "%.3g") + " syncs per step in all, GPU idle after " +
                     "them " + pct(t.idle_sync_share) + " of the step, " + usd_text(usd, s.cost);
    out.push_back({"trace-sync",
                   "sync-bound",
                   "host-device syncs inside the step (logging or Python control flow on CUDA "
                   "values): the GPU drains and waits for Python after each",
                   "accumulate on the device, log every N steps (no .item()/.cpu()/print of CUDA "
                   "tensors per step)",
                   ev,
                   false,
                   trace_score(t.idle_sync_share),
                   {"trace"},
                   usd});
  }
  if (t.gpu_busy_share < kLaunchGpuBusy && t.idle_inside_share >= kLaunchIdleShare &&
      t.median_kernel_us > 0 && t.median_kernel_us < kLaunchMedianUs) {
    double usd = t.idle_inside_share * s.cost;
    std::string ev = fixed(t.kernels_per_step, "%.0f") + " kernels per step, median " +
                     fixed(t.median_kernel_us, "%.3g") + " us, " + fixed(t.launches_per_s, "%.0f") +
                     " launches/s; GPU busy " + pct(t.gpu_busy_share) +
                     " of the step, idle between kernels " + pct(t.idle_inside_share) + ", " +
                     usd_text(usd, s.cost);
    out.push_back({"trace-launch",
                   "launch-bound",
                   "many tiny kernels: small batch, the GPU waits for Python to launch the next",
                   "larger batch, torch.compile (mode=\"reduce-overhead\" uses CUDA graphs)",
                   ev,
                   false,
                   trace_score(t.idle_inside_share),
                   {"trace"},
                   usd});
  }
  if (t.fp32_gemm_share >= kFp32Share) {
    // Excess: the FP32 GEMM/conv share of the steps' time, were it kBf16Speedup times faster.
    double step_share = t.fp32_gemm_share * t.gpu_busy_share;
    double usd = step_share * (1 - 1 / kBf16Speedup) * s.cost;
    std::string kernel = t.top_fp32_kernel.substr(0, 60);
    std::string ev = pct(t.fp32_gemm_share) + " of GPU time in FP32 GEMM/conv (" + kernel +
                     "), GPU busy " + pct(t.gpu_busy_share) + " of the step; up to " +
                     usd_text(usd, s.cost) + " in excess if bf16 runs them " +
                     fixed(kBf16Speedup, "%.0f") + "x faster";
    out.push_back({"trace-fp32",
                   "fp32-math",
                   "FP32 matrix math: Tensor Cores unused",
                   "torch.autocast(\"cuda\", dtype=torch.bfloat16), sizes in multiples of 8",
                   ev,
                   false,
                   trace_score(step_share * (1 - 1 / kBf16Speedup)),
                   {"trace"},
                   usd});
  }
  return out;
}

}  // namespace

// One data-parallel rank holds the others back at every gradient sync: the fix is on that rank
// (its loader or its own fetch), not the job's mean. It leads when the others wait at least
// a fifth of each step for it.
Finding rank_finding(const LaggingRank& lag, bool steps) {
  const std::string who = "rank " + std::to_string(lag.rank);
  const std::string fix =
      steps ? "fetch " + who +
                  "'s batches ahead of its step (a DataLoader with num_workers, or a prefetching "
                  "thread), or give it data as fast as the other ranks'"
            : "raise " + who +
                  "'s DataLoader num_workers, or move its data to storage as fast as the other "
                  "ranks'; its loader, not theirs, sets the pace";
  char evidence[160];
  std::snprintf(evidence, sizeof evidence,
                "%s's own work per step %.1fx the other ranks' median, they wait %s of each step",
                who.c_str(), lag.own_ratio, pct(lag.others_wait).c_str());
  return {"rank-lags",
          "rank-lags",
          std::string("one rank's ") + (steps ? "batch fetch" : "loader") +
              " sets the pace of every rank: the others wait for it at each gradient sync",
          fix,
          evidence,
          false,
          lag.others_wait >= 0.2 ? 0.97 : 0.45,
          {"ranks"},
          std::nullopt};
}

std::vector<Finding> diagnose(const Summary& s, const Evidence& e) {
  std::vector<Finding> out;
  const auto& dw = s.data_wait_share;
  const bool dw_high = dw && *dw > kDataWaitHigh;
  const bool dw_near_zero = dw && *dw < kDataWaitNearZero;
  const bool low_util = s.util_mean && *s.util_mean < kLowUtil;
  const bool sawtooth = s.sawtooth && *s.sawtooth >= kSawtoothHigh;
  const bool gpu_trace = e.trace && e.trace->cuda;

  if (dw_high) {
    out.push_back(loader_finding(s, e));
  } else if (low_util && !dw) {
    out.push_back(unknown_wait_finding(s, e));
  } else if (low_util && !gpu_trace) {  // a CUDA trace measures what utilization only hints
    const double util = *s.util_mean;
    const bool steady = s.util_stddev && *s.util_stddev <= kSteadyStddev && !sawtooth;
    if (steady && util >= kLaunchUtilLow && util <= kLaunchUtilHigh) {
      out.push_back(launch_finding(s, e, dw_near_zero));
      // Syncs can look the same at one-second sampling: a profile tells them apart.
      out.push_back(sync_finding(s, e, dw_near_zero, 0.3));
    } else {
      out.push_back(sync_finding(s, e, dw_near_zero, dw_near_zero ? 0.7 : 0.4));
    }
  }
  std::vector<Finding> traced;
  if (gpu_trace) {
    traced = trace_findings(s, *e.trace);
    out.insert(out.end(), traced.begin(), traced.end());
  } else if (e.trace) {
    out.push_back({"trace-cpu-only",
                   "cpu-trace",
                   e.trace->note,
                   "profile on a machine with CUDA to judge syncs, launch overhead and FP32 math",
                   std::to_string(e.trace->steps) + " steps profiled, " +
                       fixed(e.trace->syncs_per_step, "%.3g") + " aten::item/sync calls per step",
                   true,
                   0.05,
                   {"trace"},
                   std::nullopt});
  }
  if (gpu_trace && traced.empty() && !dw_high) {
    out.push_back({"trace-clean",
                   "ok",
                   "the trace shows no sync, launch or FP32 problem",
                   "nothing from the profile",
                   "GPU busy " + pct(e.trace->gpu_busy_share) + " of the step, " +
                       fixed(e.trace->syncs_per_step, "%.3g") + " syncs per step, median kernel " +
                       fixed(e.trace->median_kernel_us, "%.3g") + " us, FP32 GEMM/conv " +
                       pct(e.trace->fp32_gemm_share) + " of GPU time",
                   true,
                   0.1,
                   {"trace"},
                   std::nullopt});
  } else if (s.util_mean && *s.util_mean >= kBusyUtil && !gpu_trace) {
    out.push_back({"busy",
                   "ok",
                   "GPU busy",
                   "nothing to fix for idling; if steps are still slow, torch.autocast with "
                   "bf16 (Tensor Cores) and sizes in multiples of 8",
                   util_text(s),
                   true,
                   0.1,
                   {"gpu_util"},
                   std::nullopt});
  }
  if (e.lagging_rank) out.push_back(rank_finding(*e.lagging_rank, e.loop_source == "steps"));
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.score > b.score; });
  return out;
}

std::string verdict(const Summary& s, const Evidence& e) {
  auto findings = diagnose(s, e);
  if (!findings.empty()) return findings.front().verdict;
  return s.util_mean ? "ok" : "no-gpu-data";
}

std::string format_finding(const Finding& f) {
  return f.evidence + ": " + f.cause + " -> " + f.fix;
}

}  // namespace nodus::telemetry
