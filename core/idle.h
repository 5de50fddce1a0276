#pragma once
// When a GPU counts as idle: a utilization sample (percent of the interval in which a kernel
// ran, as nvidia-smi and NVML report it) below this. One threshold for every figure that says
// "idle": `nodus show` and the job summary (telemetry/summary.h), the report's idle share,
// shaded stretches and threshold line (report/). 10% rather than 0: a data-starved training
// loop still launches a few short kernels per batch and reads a few percent, not zero.

namespace nodus {

inline constexpr double kIdleUtilPercent = 10;

}  // namespace nodus
