#pragma once
// The symptom -> likely cause -> first fix table applied to a job's Summary. Findings come most
// likely first, each naming the signals that fired it and their numbers, so a user can check
// the reasoning. A rule never fires without its signals: an unknown data wait is said, not
// guessed; "reading from storage" needs I/O evidence.
//
//   rule              verdict           signals: when
//   loader-main       loader-starved    data_wait, loader: data wait > 10% and the loader runs in
//                                       the main process (num_workers=0): the CPU is not blamed,
//                                       torch's intra-op threads fill the cores on their own
//   loader-starved    loader-starved    data_wait: measured > 10%, CPU not saturated, no I/O
//                                       evidence (or none readable)
//   cpu-bound         cpu-bound         data_wait, cpu: data wait > 10% and the cores the job
//                                       may use (its affinity) >= 85% busy
//   io-bound          io-bound          data_wait, io: data wait > 10%, CPU not saturated, and
//                                       the tree reads >= 1 MiB/s from storage or iowait >= 10%
//   data-wait-unknown low-util          gpu_util: util < 60% and no data wait measured
//   launch-bound      launch-bound      gpu_util, data_wait: steady util 30-50% (sd <= 15, no
//                                       sawtooth), data wait measured < 10%
//   sync-bound        gpu-idle-in-step  gpu_util, data_wait: util < 60%, data wait measured < 10%
//   busy              ok                gpu_util: util >= 80%: a note only
//
// With a CUDA trace (--profile), what the trace measured replaces the utilization guesses for
// the last three rows, each priced at the job's cost (the share of step time it wastes):
//   trace-sync        sync-bound        trace: >= 1 host-device sync per step and the GPU idle
//                                       after syncs >= 5% of the step
//   trace-launch      launch-bound      trace: GPU busy < 60% of the step, idle inside the step
//                                       (not fetching, not after a sync) >= 20%, median kernel
//                                       < 20 us
//   trace-fp32        fp32-math         trace: FP32 GEMM/conv kernels >= 30% of GPU busy time
// A CPU-only trace adds a note: the GPU rows cannot be judged.

#include <optional>
#include <string>
#include <vector>

#include "telemetry/summary.h"
#include "telemetry/trace_reader.h"

namespace nodus::telemetry {

inline constexpr double kDataWaitHigh = 0.10;      // fix the loader before the model
inline constexpr double kDataWaitNearZero = 0.05;  // the loader is not what the GPU waits on
inline constexpr double kLowUtil = 60;
inline constexpr double kBusyUtil = 80;
inline constexpr double kLaunchUtilLow = 30;
inline constexpr double kLaunchUtilHigh = 50;
inline constexpr double kSteadyStddev = 15;    // percentage points
inline constexpr double kSawtoothHigh = 0.25;  // a quarter of the steps jump idle <-> busy
inline constexpr double kCpuSaturated = 0.85;  // of the job's cores
inline constexpr double kCpuIdle = 0.40;
inline constexpr double kProcessBusy = 80;      // percent of one core: a process computing flat out
inline constexpr double kReadMibHigh = 1.0;     // MiB/s read from storage by the job's tree
inline constexpr double kIowaitHigh = 0.10;     // of the machine's CPU time
inline constexpr double kSyncIdleShare = 0.05;  // of the step, GPU idle after syncs
inline constexpr double kLaunchIdleShare = 0.20;  // of the step, GPU idle between kernels
inline constexpr double kLaunchGpuBusy = 0.60;    // of the step
inline constexpr double kLaunchMedianUs = 20;     // median kernel duration
inline constexpr double kFp32Share = 0.30;        // of GPU busy time in FP32 GEMM/conv
inline constexpr double kBf16Speedup = 3;         // the guide's "up to 3x" for autocast

// What the diagnosis knows besides the summary; empty fields are unknown.
// Data-parallel ranks in step where one lags by its data (engine's slowest_rank): which, and
// what it costs the others.
struct LaggingRank {
  int rank = 0;
  double own_ratio = 0;    // its own work per step / the other ranks' median
  double others_wait = 0;  // share of each step the other ranks wait for it, 0..1
};

struct Evidence {
  std::optional<double> read_mib_per_s;  // storage reads of the job's tree (steady state)
  std::optional<double> iowait_share;    // machine-wide, 0..1
  std::string data_wait_source;          // "instrumented", "job" (NODUS_METRICS or regex)
  std::optional<int> loader_workers;     // the driving DataLoader's num_workers (the hook)
  std::string io_source;                 // where read_mib_per_s came from: "cgroup io.stat", ...
  std::optional<TraceFacts> trace;       // --profile's trace of a few steps
  // What drove the loop the hook timed: "loader" (DataLoader batches), "steps" (optimizer steps,
  // no DataLoader: the data wait is the host time outside forward, backward and the optimizer),
  // "" (unknown).
  std::string loop_source;
  // Where no data wait was measured: what was missing ("nodus's hook saw no DataLoader batch
  // and no optimizer step"); "" when unknown.
  std::string unmeasured_why;
  // --profile of a loop driven by steps: the function outside the step that took the most of
  // it, "get_batch at train.py:116 (44% of the step)"; "" when none was seen.
  std::string top_outside;
  std::optional<LaggingRank> lagging_rank;
};

// data_wait_source of a loop driven by optimizer steps.
inline constexpr const char* kOutOfStepSource =
    "instrumented: host time outside forward, backward and the optimizer";

struct Finding {
  std::string rule;     // loader-starved, cpu-bound, io-bound, sync-bound, launch-bound, busy
  std::string verdict;  // the short word for tables
  std::string cause;
  std::string fix;       // the first thing to try
  std::string evidence;  // the numbers that triggered the rule
  bool note = false;     // informational: nothing is wrong
  double score = 0;      // 0..1, how strongly the evidence points here; findings sort by it
  std::vector<std::string> signals;  // the signals that fired it: data_wait, gpu_util, cpu, io
  std::optional<double> usd;         // what it costs (idle or excess dollars), where priced
};

// Findings, most likely first; empty when nothing applies (or nothing is known).
std::vector<Finding> diagnose(const Summary& s, const Evidence& e = {});

// One word for tables: the top finding's verdict, else "ok" with GPU data, else "no-gpu-data".
std::string verdict(const Summary& s, const Evidence& e = {});

// "data wait 72% > 10%, GPU util 31%: loader starved -> raise num_workers (try 4, 8, 16), ..."
std::string format_finding(const Finding& f);

}  // namespace nodus::telemetry
