// The nvidia-smi sampler against a fake nvidia-smi script: a real child, a real pipe.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "core/helper_children.h"
#include "telemetry/gpu_sampler.h"
#include "temp_dir.h"

namespace nodus::telemetry {
namespace {

using namespace std::chrono_literals;

// Polls until `want` samples came or 10 s passed (generous for a loaded machine).
std::vector<GpuSample> poll_until(GpuSampler& s, const std::vector<int>& gpus, size_t want) {
  std::vector<GpuSample> all;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (all.size() < want && std::chrono::steady_clock::now() < deadline) {
    auto got = s.poll(gpus);
    all.insert(all.end(), got.begin(), got.end());
    std::this_thread::sleep_for(20ms);
  }
  return all;
}

pid_t read_pid(const std::string& path) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

TEST(SmiSampler, StreamsSamplesOfTheRequestedGpus) {
  testing::TempDir dir;
  std::string smi =
      dir.script("nvidia-smi",
                 "#!/bin/sh\n"
                 "echo \"$@\" > " +
                     dir.path() +
                     "/args\n"
                     "while true; do\n"
                     "  echo '2026/11/29 15:17:35.651, 0, 27, 7, 883, 192.65, 1965, 5'\n"
                     "  echo '2026/11/29 15:17:35.652, 1, 90, 40, 883, 400.00, 1980, 5'\n"
                     "  echo '2026/11/29 15:17:35.653, 2, [N/A], 0, 883, 60.00, 1410, 5'\n"
                     "  sleep 0.05\n"
                     "done\n");
  std::string error;
  auto sampler = make_smi_sampler(smi, 50, &error);
  ASSERT_TRUE(sampler) << error;
  EXPECT_EQ(sampler->source(), "nvidia-smi");
  auto samples = poll_until(*sampler, {1, 2}, 3);
  ASSERT_GE(samples.size(), 3u);
  for (const auto& s : samples) {
    EXPECT_EQ(s.gpu_index, 1);  // 0 not asked for; 2 has no utilization
    EXPECT_EQ(s.util_gpu, 90);
    EXPECT_EQ(s.power_w, 400.0);
  }
  std::ifstream args(dir.path() + "/args");
  std::string line;
  std::getline(args, line);
  EXPECT_NE(line.find("--format=csv,noheader,nounits -lms 50"), std::string::npos) << line;
}

TEST(SmiSampler, ChildIsAHelperUntilTheSamplerIsGone) {
  testing::TempDir dir;
  std::string smi =
      dir.script("nvidia-smi", "#!/bin/sh\necho $$ > " + dir.path() + "/pid.tmp\nmv " + dir.path() +
                                   "/pid.tmp " + dir.path() + "/pid\nexec sleep 60\n");
  std::string error;
  auto sampler = make_smi_sampler(smi, 1000, &error);
  ASSERT_TRUE(sampler) << error;
  pid_t pid = read_pid(dir.path() + "/pid");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(is_helper_child(pid));
  EXPECT_TRUE(sampler->poll({0}).empty());  // nothing written: poll returns at once
  sampler.reset();
  EXPECT_FALSE(is_helper_child(pid));
  EXPECT_EQ(kill(pid, 0), -1);  // killed and reaped: the pid no longer exists
  EXPECT_EQ(errno, ESRCH);
}

TEST(SmiSampler, KeepsPartialLinesUntilComplete) {
  testing::TempDir dir;
  std::string smi = dir.script("nvidia-smi",
                               "#!/bin/sh\n"
                               "printf '2026/11/29 15:17:35.651, 0, 2'\n"
                               "touch " +
                                   dir.path() +
                                   "/half\n"
                                   "sleep 0.5\n"
                                   "printf '7, 7, 883, 192.65, 1965\\n'\n"
                                   "exec sleep 60\n");
  std::string error;
  auto sampler = make_smi_sampler(smi, 1000, &error);
  ASSERT_TRUE(sampler) << error;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!std::ifstream(dir.path() + "/half") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(sampler->poll({0}).empty());
  auto samples = poll_until(*sampler, {0}, 1);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].util_gpu, 27);
}

TEST(SmiSampler, ChildThatExitsLeavesAnEmptyStream) {
  testing::TempDir dir;
  std::string smi = dir.script("nvidia-smi",
                               "#!/bin/sh\necho '2026/11/29 15:17:35.651, 0, 27, 7, 883, 192.65, "
                               "1965'\n");
  std::string error;
  auto sampler = make_smi_sampler(smi, 1000, &error);
  ASSERT_TRUE(sampler) << error;
  EXPECT_EQ(poll_until(*sampler, {0}, 1).size(), 1u);
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(sampler->poll({0}).empty());
}

TEST(SmiSampler, MissingExecutableIsAnError) {
  std::string error;
  EXPECT_FALSE(make_smi_sampler("/nonexistent/nvidia-smi", 1000, &error));
  EXPECT_EQ(error, "/nonexistent/nvidia-smi not found");
  EXPECT_FALSE(make_smi_sampler("nodus-no-such-nvidia-smi", 1000, &error));
  EXPECT_EQ(error, "nodus-no-such-nvidia-smi not found");
}

bool nvml_present() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib != nullptr;  // left loaded: the sampler would load it anyway
}

TEST(GpuSamplerFactory, FallsBackToNvidiaSmiThenExplains) {
  testing::TempDir dir;
  std::string smi = dir.script("fake-smi", "#!/bin/sh\nexec sleep 60\n");
  setenv("NODUS_NVIDIA_SMI", smi.c_str(), 1);
  std::string note;
  auto sampler = make_gpu_sampler(1000, &note);
  ASSERT_TRUE(sampler);
  if (nvml_present()) {
    EXPECT_EQ(sampler->source(), "nvml");
  } else {
    EXPECT_EQ(sampler->source(), "nvidia-smi");
    EXPECT_EQ(note, "libnvidia-ml.so.1 not found; GPU telemetry from " + smi);
  }
  sampler.reset();

  setenv("NODUS_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
  note.clear();
  sampler = make_gpu_sampler(1000, &note);
  unsetenv("NODUS_NVIDIA_SMI");
  if (nvml_present()) {
    EXPECT_TRUE(sampler);
  } else {
    EXPECT_FALSE(sampler);
    EXPECT_EQ(note, "no GPU telemetry: libnvidia-ml.so.1 and /nonexistent/nvidia-smi not found");
  }
}

}  // namespace
}  // namespace nodus::telemetry
