#pragma once
// GpuSampler reads utilization and friends of the GPUs a job holds. The supervisor calls poll()
// once per --sample-interval; poll() never blocks for long and returns what was measured since
// the previous call (one sample per GPU per interval, utilization averaged over the interval
// where the source allows).

#include <memory>
#include <string>
#include <vector>

#include "core/samples.h"

namespace nodus::telemetry {

class GpuSampler {
 public:
  virtual ~GpuSampler();
  // Samples of the GPUs with these nvidia-smi/NVML indices since the previous call; other GPUs
  // are left out. Empty when the source had nothing new (or stopped answering).
  virtual std::vector<GpuSample> poll(const std::vector<int>& gpu_indices) = 0;
  // "nvml" or "nvidia-smi", for notes and the job record.
  virtual std::string source() const = 0;
};

// NVML first (libnvidia-ml.so.1 loaded with dlopen, nothing linked), else a streamed nvidia-smi
// child (executable from config "nvidia_smi"). Neither usable: nullptr, and *note says so in one
// sentence. *note may also be set beside a sampler (why NVML was passed over).
std::unique_ptr<GpuSampler> make_gpu_sampler(int interval_ms, std::string* note);

// The two real samplers, for callers and tests that want one in particular. On failure they
// return nullptr and put the reason in *error.
std::unique_ptr<GpuSampler> make_nvml_sampler(int interval_ms, std::string* error);
// Starts `executable` (a path, or a name looked up in PATH) with smi_arguments(interval_ms).
std::unique_ptr<GpuSampler> make_smi_sampler(const std::string& executable, int interval_ms,
                                             std::string* error);

}  // namespace nodus::telemetry
