#pragma once
// Time series points that telemetry produces, the store keeps and reports read back.

#include <optional>
#include <string>

namespace nodus {

// One reading of one GPU. Fields the source could not read are empty.
struct GpuSample {
  double t = 0;  // unix seconds
  int gpu_index = 0;
  double util_gpu = 0;  // percent of the sample period a kernel ran (nvidia-smi utilization.gpu)
  std::optional<double> util_mem;  // percent of time memory was read or written
  std::optional<double> mem_used_mib;
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> pcie_rx_kbs;
  std::optional<double> pcie_tx_kbs;
};

// CPU use of a job's whole process tree over one sampling interval.
struct HostSample {
  double t = 0;
  double cpu_percent = 0;  // 100 = one core busy
  int cores = 1;           // cores available to the job
  int nprocs = 0;          // processes in the tree
  double rss_mib = 0;
  double max_process_cpu_percent = 0;  // the busiest single process (main loop or a worker)
};

// One numeric field of one line the job reported (NODUS_METRICS or --metric-regex).
struct MetricPoint {
  double t = 0;
  std::string name;
  double value = 0;
};

}  // namespace nodus
