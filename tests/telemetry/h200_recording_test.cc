// Series recorded on one NVIDIA H200 (16 cores, PyTorch 2.11) with
// tests/data/telemetry/record/record_h200.sh: NVML sampling at 1 s, the /proc host sampler and
// the job's own data_wait reports, as nodus's supervisor collects them.

#include <gtest/gtest.h>

#include <sstream>

#include "series_fixture.h"
#include "telemetry/diagnosis.h"
#include "telemetry/smi_csv.h"

namespace nodus::telemetry {
namespace {

Summary recorded(const std::string& name) { return summarize(testing::load_series(name)); }

TEST(H200Recording, ResNetWithoutWorkersIsLoaderStarved) {
  // examples/train.py --num-workers 0: decoding runs in the training process.
  Summary s = recorded("h200_workers0.csv");
  EXPECT_GT(*s.data_wait_share, 0.9);
  EXPECT_LT(*s.util_mean, 5);
  auto f = diagnose(s);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "loader-starved");
  EXPECT_EQ(verdict(s), "loader-starved");
}

TEST(H200Recording, FourteenWorkersStillWaitForData) {
  Summary s = recorded("h200_workers14.csv");
  EXPECT_GT(*s.data_wait_share, 0.1);
  EXPECT_LT(*s.cpu_saturation, kCpuSaturated);  // workers busy, but cores left over
  EXPECT_EQ(verdict(s), "loader-starved");
}

TEST(H200Recording, MatmulLoopIsBusyOnceRunning) {
  // Back-to-back bf16 matmuls after a few seconds of start-up (python, torch, CUDA context).
  Summary s = recorded("h200_busy.csv");
  EXPECT_GE(*s.util_median, 95);
  EXPECT_LT(*s.data_wait_share, 0.01);
  EXPECT_EQ(verdict(s), "ok");
}

TEST(H200Recording, SyncEveryStepIdlesTheGpuInsideTheStep) {
  // ~15 ms of matmuls, loss.item(), ~25 ms of host work per step; no data wait.
  Summary s = recorded("h200_sync.csv");
  EXPECT_LT(*s.util_mean, kLowUtil);
  EXPECT_LT(*s.data_wait_share, kDataWaitNearZero);
  auto f = diagnose(s);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].verdict, "gpu-idle-in-step");
}

TEST(H200Recording, EveryRawNvidiaSmiLineParses) {
  // -lms 250 with pcie.link.gen.current as the eighth field, during the first workload.
  std::stringstream in(testing::read_text("h200_smi_raw.csv"));
  int lines = 0;
  double last_t = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    auto s = parse_smi_line(line);
    ASSERT_TRUE(s) << line;
    EXPECT_EQ(s->gpu_index, 0);
    EXPECT_GE(s->util_gpu, 0);
    EXPECT_LE(s->util_gpu, 100);
    EXPECT_TRUE(s->power_w && s->sm_clock_mhz && s->mem_used_mib && s->util_mem);
    EXPECT_GT(s->t, last_t);
    last_t = s->t;
  }
  EXPECT_GT(lines, 100);
}

}  // namespace
}  // namespace nodus::telemetry
