#pragma once
// Reads a torch.profiler Chrome trace (the Python hook's trace-<rank>.json) and measures the
// profiled steps: GPU busy time against step time, GPU-idle gaps while the loop fetches its
// next batch vs inside the step, host-device syncs (cudaStreamSynchronize,
// cudaDeviceSynchronize, aten::item, aten::_local_scalar_dense, blocking copies to host) with
// their count per step, call site and the GPU idle that follows each, kernel count per step,
// median kernel duration and launch rate, the GPU's idle put down to the line the loop's thread
// was at, GEMM/convolution GPU time by precision (from kernel names), and the top ops by self
// CUDA time (self CPU time in a CPU-only trace).
//
// The file is never loaded whole: nlohmann/json's SAX interface streams it, and each event
// the measures need is kept as a small fixed-size record (names interned once). Memory grows
// with the number of kept events up to `max_events`, not with the file's bytes; past the cap
// events are counted but not kept, and the facts say so (truncated).
//
// Both layouts torch writes are read: Kineto's {"traceEvents": [...]} with categories
// (cpu_op, user_annotation, python_function, kernel, gpu_memcpy, cuda_runtime, ...) and the
// legacy profiler's bare array without categories (Debian's CPU-only torch 1.13).

#include <cstdint>
#include <istream>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/result.h"

namespace nodus::telemetry {

// One host-device sync site: what synced and from where, over the profiled steps.
struct SyncSite {
  std::string what;  // aten::item, cudaStreamSynchronize in aten::to, ...
  std::string site;  // train.py:42 (the innermost frame of the job's own code), or ""
  int count = 0;
  double gpu_idle_us = 0;  // GPU idle after these syncs, summed
};

// One line the GPU waited for: what the loop's thread was doing while the GPU had nothing to
// run, over the profiled steps. Each GPU-idle gap's parts (as the idle shares split them) go to
// one site: a sync's idle to the sync's site; the rest to the innermost of the job's own frames
// that covers more than half of the part (failing that, the one that covers most of it).
struct IdleSite {
  std::string site;  // train.py, in get_batch() (as SyncSite::site), or "(no Python frame)"
  std::string kind;  // "sync" (after a host-device sync), "fetch" (in DataLoader __next__), "host"
  std::string what;  // the sync (aten::item, ...), "DataLoader __next__", or "" for host work
  double gpu_idle_us_per_step = 0;
  double share = 0;  // of the steps' time, 0..1
};

struct TopOp {
  std::string name;
  double us_per_step = 0;  // self CUDA time (self CPU time when the trace has no CUDA)
};

// One step drawn by the report: times in microseconds from the step's start.
struct StepTimeline {
  double step_us = 0;
  std::vector<std::pair<double, double>> cpu;         // the loop's thread busy (start, end)
  std::vector<std::pair<double, double>> gpu;         // kernels and copies (merged)
  std::vector<std::pair<double, double>> fetch;       // waiting for the next batch
  std::vector<std::pair<double, std::string>> syncs;  // start of each sync, what
};

struct TraceFacts {
  bool cuda = false;   // GPU activity in the trace: the GPU rows can be judged
  int steps = 0;       // ProfilerStep windows
  double step_us = 0;  // mean
  // Shares of the steps' time, 0..1 (GPU ones only with cuda).
  double gpu_busy_share = 0;
  double idle_fetch_share = 0;   // GPU idle while the loop fetched its next batch
  double idle_sync_share = 0;    // GPU idle after host-device syncs
  double idle_inside_share = 0;  // GPU idle otherwise inside the step (Python, launches)
  double fetch_share = 0;        // the loop's time inside DataLoader __next__
  double syncs_per_step = 0;
  std::vector<SyncSite> sync_sites;  // most idle first
  std::vector<IdleSite> idle_sites;  // most idle first, at most 8 (with cuda only)
  double kernels_per_step = 0;
  double median_kernel_us = 0;
  double launches_per_s = 0;  // kernels per second of step time
  double cpu_ops_per_step = 0;
  // GEMM and convolution kernels' GPU time by precision ("fp32", "tf32", "bf16", "fp16",
  // "fp8", "unknown"), as shares of the GPU's busy time.
  std::vector<std::pair<std::string, double>> gemm_share_by_precision;
  double gemm_share = 0;        // all GEMM/conv kernels
  double fp32_gemm_share = 0;   // FP32 (no tensor cores)
  std::string top_fp32_kernel;  // the FP32 GEMM/conv kernel with the most GPU time
  std::vector<TopOp> top_ops;   // at most 5
  StepTimeline timeline;        // the median-length step
  uint64_t events = 0;          // complete events in the file
  uint64_t kept = 0;
  bool truncated = false;
  std::string note;  // "CPU-only trace: ..." and the like

  nlohmann::json to_json() const;
};

// "sm90_xmma_gemm_bf16bf16_bf16f32..." -> "bf16"; "" when the kernel is no GEMM/convolution.
std::string gemm_precision(std::string_view kernel_name);

Result<TraceFacts> read_trace(std::istream& in, size_t max_events = 2'000'000);
Result<TraceFacts> read_trace_file(const std::string& path, size_t max_events = 2'000'000);

}  // namespace nodus::telemetry
