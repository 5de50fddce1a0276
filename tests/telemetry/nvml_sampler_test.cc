// The NVML sampler where libnvidia-ml.so.1 exists (a GPU machine); elsewhere, its error.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "telemetry/gpu_sampler.h"

namespace nodus::telemetry {
namespace {

TEST(NvmlSampler, SamplesGpuZeroOrSaysWhyNot) {
  bool present = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL) != nullptr;
  std::string error;
  auto sampler = make_nvml_sampler(250, &error);
  if (!present) {
    EXPECT_FALSE(sampler);
    EXPECT_EQ(error, "libnvidia-ml.so.1 not found");
    return;
  }
  ASSERT_TRUE(sampler) << error;
  EXPECT_EQ(sampler->source(), "nvml");
  auto samples = sampler->poll({0});
  ASSERT_EQ(samples.size(), 1u);
  const auto& s = samples[0];
  EXPECT_EQ(s.gpu_index, 0);
  EXPECT_GE(s.util_gpu, 0);
  EXPECT_LE(s.util_gpu, 100);
  ASSERT_TRUE(s.util_mem);
  EXPECT_LE(*s.util_mem, 100);
  EXPECT_TRUE(s.sm_clock_mhz);
  ASSERT_TRUE(s.mem_used_mib);
  EXPECT_GT(*s.mem_used_mib, 0);
  ASSERT_TRUE(s.power_w);
  EXPECT_GT(*s.power_w, 1);
  EXPECT_GT(s.t, 1.7e9);
  EXPECT_FALSE(s.pcie_rx_kbs);                 // the first poll only takes the counters' baseline
  EXPECT_TRUE(sampler->poll({4096}).empty());  // no such GPU: left out, not an error
}

TEST(NvmlSampler, PollDoesNotBlock) {
  if (dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL) == nullptr) GTEST_SKIP() << "no NVML";
  std::string error;
  auto sampler = make_nvml_sampler(250, &error);
  ASSERT_TRUE(sampler) << error;
  sampler->poll({0});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = std::chrono::steady_clock::now();
  auto samples = sampler->poll({0});
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(samples.size(), 1u);
  // About 3 ms on an H200; nvmlDeviceGetPcieThroughput alone would take 42 ms.
  EXPECT_LT(took, std::chrono::milliseconds(20));
  EXPECT_FALSE(samples[0].pcie_rx_kbs);
}

}  // namespace
}  // namespace nodus::telemetry
