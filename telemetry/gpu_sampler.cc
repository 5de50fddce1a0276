#include "telemetry/gpu_sampler.h"

#include "core/config.h"

namespace nodus::telemetry {

GpuSampler::~GpuSampler() = default;

std::unique_ptr<GpuSampler> make_gpu_sampler(int interval_ms, std::string* note) {
  std::string nvml_error;
  if (auto s = make_nvml_sampler(interval_ms, &nvml_error)) return s;
  std::string smi_error;
  std::string smi = config_get("nvidia_smi");
  if (auto s = make_smi_sampler(smi, interval_ms, &smi_error)) {
    if (note) *note = nvml_error + "; GPU telemetry from " + smi;
    return s;
  }
  // "a not found" + "b not found" read better as "a and b not found".
  const std::string nf = " not found";
  auto ends_nf = [&](const std::string& e) {
    return e.size() > nf.size() && e.compare(e.size() - nf.size(), nf.size(), nf) == 0;
  };
  if (ends_nf(nvml_error) && ends_nf(smi_error)) nvml_error.resize(nvml_error.size() - nf.size());
  if (note) *note = "no GPU telemetry: " + nvml_error + " and " + smi_error;
  return nullptr;
}

}  // namespace nodus::telemetry
