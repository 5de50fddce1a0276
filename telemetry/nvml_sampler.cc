// The NVML sampler. libnvidia-ml.so.1 is loaded with dlopen so nodus builds and runs on machines
// without the NVIDIA driver; the few NVML types used are declared here from NVML's documented ABI.

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/job.h"
#include "telemetry/gpu_sampler.h"

namespace nodus::telemetry {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_opaque*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
};
struct nvmlSample_t {
  unsigned long long timeStamp;  // microseconds
  nvmlValue_t sampleValue;
};

constexpr nvmlReturn_t kSuccess = 0;
constexpr int kClockSm = 1;         // NVML_CLOCK_SM
constexpr int kGpuUtilSamples = 1;  // NVML_GPU_UTILIZATION_SAMPLES
constexpr int kMemUtilSamples = 2;  // NVML_MEMORY_UTILIZATION_SAMPLES
enum ValueType { kDouble = 0, kUInt = 1, kULong = 2, kULongLong = 3, kSLongLong = 4 };

struct NvmlApi {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*samples)(nvmlDevice_t, int, unsigned long long, int*, unsigned int*,
                          nvmlSample_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*);
};

template <typename Fn>
bool bind(void* lib, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*fn == nullptr) *missing = name;
  return *fn != nullptr;
}

double sample_value(int type, const nvmlValue_t& v) {
  switch (type) {
    case kDouble:
      return v.dVal;
    case kULong:
      return static_cast<double>(v.ulVal);
    case kULongLong:
      return static_cast<double>(v.ullVal);
    case kSLongLong:
      return static_cast<double>(v.sllVal);
    default:
      return v.uiVal;
  }
}

class NvmlSampler : public GpuSampler {
 public:
  NvmlSampler(NvmlApi api, int interval_ms) : api_(api), interval_us_(interval_ms * 1000ull) {}
  ~NvmlSampler() override { api_.shutdown(); }

  std::string source() const override { return "nvml"; }

  std::vector<GpuSample> poll(const std::vector<int>& gpu_indices) override {
    std::vector<GpuSample> out;
    double now = unix_now();
    for (int index : gpu_indices) {
      nvmlDevice_t dev = nullptr;
      if (index < 0 || api_.handle_by_index(static_cast<unsigned>(index), &dev) != kSuccess)
        continue;
      GpuSample s;
      s.t = now;
      s.gpu_index = index;
      auto util = interval_mean(index, dev, kGpuUtilSamples);
      s.util_mem = interval_mean(index, dev, kMemUtilSamples);
      if (!util || !s.util_mem) {
        // No driver samples (none new, or unsupported): the instantaneous rates instead.
        nvmlUtilization_t rates{};
        if (api_.utilization(dev, &rates) == kSuccess) {
          if (!util) util = rates.gpu;
          if (!s.util_mem) s.util_mem = rates.memory;
        }
      }
      if (!util) continue;  // no utilization, no sample: never a made-up 0
      s.util_gpu = *util;
      nvmlMemory_t mem{};
      if (api_.memory(dev, &mem) == kSuccess) s.mem_used_mib = mem.used / (1024.0 * 1024.0);
      unsigned int value = 0;
      if (api_.power(dev, &value) == kSuccess) s.power_w = value / 1000.0;  // milliwatts
      if (api_.clock(dev, kClockSm, &value) == kSuccess) s.sm_clock_mhz = value;
      // pcie_rx_kbs / pcie_tx_kbs stay empty. Measured on an H200 (driver of 2026-11):
      // nvmlDeviceGetPcieThroughput blocks 21 ms per direction per GPU (it counts over a 20 ms
      // window), 42 ms of every poll per GPU; the non-blocking byte counters
      // (NVML_FI_DEV_PCIE_COUNT_RX/TX_BYTES via nvmlDeviceGetFieldValues) are 32-bit and wrap
      // about 14 times a second during a 58 GB/s host-to-device copy, so a rate per interval
      // cannot be recovered from them.
      out.push_back(s);
    }
    return out;
  }

 private:
  // The mean of the driver's own utilization samples (one every 1/6 s to 1 s; every 200 ms on
  // an H200) taken since the previous poll: a single reading is too coarse to judge from
  // (0, 3, 27, 0 ... for a GPU busy 10% of the time). The first poll of a GPU takes the last
  // interval's worth of the driver's buffer.
  std::optional<double> interval_mean(int index, nvmlDevice_t dev, int sampling) {
    auto key = std::make_pair(index, sampling);
    auto it = last_seen_us_.find(key);
    unsigned long long last = it == last_seen_us_.end() ? 0 : it->second;
    int type = kUInt;
    unsigned int count = 0;
    if (api_.samples(dev, sampling, last, &type, &count, nullptr) != kSuccess || count == 0)
      return std::nullopt;
    std::vector<nvmlSample_t> buf(count);
    if (api_.samples(dev, sampling, last, &type, &count, buf.data()) != kSuccess)
      return std::nullopt;
    buf.resize(std::min<size_t>(count, buf.size()));
    unsigned long long newest = last;
    for (const auto& s : buf) newest = std::max(newest, s.timeStamp);
    unsigned long long from = last + 1;
    if (last == 0) from = newest > interval_us_ ? newest - interval_us_ : 0;
    double sum = 0;
    int n = 0;
    for (const auto& s : buf) {
      if (s.timeStamp < from) continue;
      sum += sample_value(type, s.sampleValue);
      ++n;
    }
    last_seen_us_[key] = newest;
    if (n == 0) return std::nullopt;
    return sum / n;
  }

  NvmlApi api_;
  unsigned long long interval_us_;
  std::map<std::pair<int, int>, unsigned long long> last_seen_us_;  // (GPU, sampling type)
};

}  // namespace

std::unique_ptr<GpuSampler> make_nvml_sampler(int interval_ms, std::string* error) {
  // Never dlclose'd: NVML may keep state past nvmlShutdown, and the library is small.
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    *error = "libnvidia-ml.so.1 not found";
    return nullptr;
  }
  NvmlApi api{};
  std::string missing;
  if (!(bind(lib, "nvmlInit_v2", &api.init, &missing) &&
        bind(lib, "nvmlShutdown", &api.shutdown, &missing) &&
        bind(lib, "nvmlErrorString", &api.error_string, &missing) &&
        bind(lib, "nvmlDeviceGetHandleByIndex_v2", &api.handle_by_index, &missing) &&
        bind(lib, "nvmlDeviceGetUtilizationRates", &api.utilization, &missing) &&
        bind(lib, "nvmlDeviceGetSamples", &api.samples, &missing) &&
        bind(lib, "nvmlDeviceGetMemoryInfo", &api.memory, &missing) &&
        bind(lib, "nvmlDeviceGetPowerUsage", &api.power, &missing) &&
        bind(lib, "nvmlDeviceGetClockInfo", &api.clock, &missing))) {
    *error = "libnvidia-ml.so.1 lacks " + missing;
    return nullptr;
  }
  nvmlReturn_t rc = api.init();
  if (rc != kSuccess) {
    *error = std::string("nvmlInit failed: ") + api.error_string(rc);
    return nullptr;
  }
  return std::make_unique<NvmlSampler>(api, interval_ms);
}

}  // namespace nodus::telemetry
