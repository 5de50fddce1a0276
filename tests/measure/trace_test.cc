// The trace reader on traces of known shape (tests/data/telemetry/traces/, written by
// bench/make_trace.py: torch 2.x Kineto layout; cpu-legacy.json is Debian's torch 1.13 CPU
// profiler), and the diagnosis rows that only a trace can fire.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "telemetry/diagnosis.h"
#include "telemetry/trace_reader.h"

namespace nodus {
namespace {

const std::string kTraces = std::string(NODUS_TEST_DATA) + "/telemetry/traces/";

telemetry::TraceFacts read(const std::string& name) {
  auto f = telemetry::read_trace_file(kTraces + name);
  EXPECT_TRUE(f) << (f ? "" : f.error().message);
  return f ? *f : telemetry::TraceFacts{};
}

// A job that cost $10 in all, its data wait near zero, the GPU reported 50% busy.
std::vector<telemetry::Finding> diagnose_with(const telemetry::TraceFacts& t) {
  telemetry::Summary s;
  s.cost = 10;
  s.util_mean = 50;
  s.util_stddev = 5;
  s.data_wait_share = 0.01;
  telemetry::Evidence e;
  e.trace = t;
  return telemetry::diagnose(s, e);
}

TEST(TraceReader, KernelNamesGivePrecision) {
  using telemetry::gemm_precision;
  EXPECT_EQ(gemm_precision("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), "bf16");
  EXPECT_EQ(gemm_precision("ampere_sgemm_128x64_nn"), "fp32");
  EXPECT_EQ(gemm_precision("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x128x32"), "tf32");
  EXPECT_EQ(gemm_precision("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"), "fp16");
  EXPECT_EQ(gemm_precision("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNN"), "fp16");
  // Seen on the H200 under bf16 autocast (torch 2.11).
  EXPECT_EQ(gemm_precision("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), "bf16");
  EXPECT_EQ(gemm_precision("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3"),
            "fp32");
  EXPECT_EQ(gemm_precision("void implicit_convolve_sgemm<float, float, 1024, 5, 5>"), "fp32");
  EXPECT_EQ(gemm_precision("void at::native::vectorized_elementwise_kernel<4, add>"), "");
  EXPECT_EQ(gemm_precision("void at::native::unrolled_elementwise_kernel<convert>"), "");
}

TEST(TraceReader, AHealthyTraceIsBusyWithNoSyncAndNoRow) {
  auto t = read("healthy.json");
  EXPECT_TRUE(t.cuda);
  EXPECT_EQ(t.steps, 5);
  EXPECT_GT(t.gpu_busy_share, 0.8);
  EXPECT_EQ(t.syncs_per_step, 0);
  EXPECT_EQ(t.kernels_per_step, 46);
  EXPECT_GT(t.gemm_share, 0.5);
  EXPECT_EQ(t.fp32_gemm_share, 0);
  ASSERT_FALSE(t.top_ops.empty());
  EXPECT_EQ(t.top_ops[0].name, "aten::mm");  // self CUDA time, through the External id
  EXPECT_NEAR(t.top_ops[0].us_per_step, 6 * 900, 1e-6);
  auto f = diagnose_with(t);
  for (const auto& x : f) EXPECT_TRUE(x.note) << x.rule << ": " << x.evidence;
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "trace-clean");
}

TEST(TraceReader, ItemEveryStepIsASyncWithItsSiteAndTheIdleAfterIt) {
  auto t = read("sync.json");
  EXPECT_EQ(t.syncs_per_step, 1);  // item > _local_scalar_dense > cudaStreamSynchronize: one
  ASSERT_EQ(t.sync_sites.size(), 1u);
  EXPECT_EQ(t.sync_sites[0].what, "aten::item");
  EXPECT_EQ(t.sync_sites[0].site, "train.py, in step()");
  EXPECT_EQ(t.sync_sites[0].count, 5);
  // After each sync the GPU waits ~3 ms of Python logging.
  EXPECT_NEAR(t.sync_sites[0].gpu_idle_us / 5, 3040, 100);
  EXPECT_NEAR(t.idle_sync_share, 3040.0 / t.step_us, 0.02);
  auto f = diagnose_with(t);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "trace-sync");
  EXPECT_NE(f[0].evidence.find("aten::item 1 per step at train.py, in step()"), std::string::npos)
      << f[0].evidence;
  ASSERT_TRUE(f[0].usd);
  EXPECT_NEAR(*f[0].usd, t.idle_sync_share * 10, 1e-9);
  // The timeline marks it.
  ASSERT_FALSE(t.timeline.syncs.empty());
  EXPECT_EQ(t.timeline.syncs[0].second, "aten::item");
}

TEST(TraceReader, TinyKernelsLaunchedOneByOneAreLaunchBound) {
  auto t = read("launch.json");
  EXPECT_EQ(t.kernels_per_step, 300);
  EXPECT_NEAR(t.median_kernel_us, 4, 1e-9);
  EXPECT_LT(t.gpu_busy_share, 0.4);
  EXPECT_GT(t.idle_inside_share, 0.5);
  auto f = diagnose_with(t);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "trace-launch");
  EXPECT_NE(f[0].evidence.find("300 kernels per step, median 4 us"), std::string::npos)
      << f[0].evidence;
}

TEST(TraceReader, Fp32GemmsAreFp32Math) {
  auto t = read("fp32.json");
  EXPECT_GT(t.fp32_gemm_share, 0.8);
  EXPECT_EQ(t.top_fp32_kernel, "ampere_sgemm_128x64_nn");
  auto f = diagnose_with(t);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "trace-fp32");
  ASSERT_TRUE(f[0].usd);
  EXPECT_GT(*f[0].usd, 0);
}

TEST(TraceReader, DataWaitStillComesFirst) {
  auto t = read("sync.json");
  telemetry::Summary s;
  s.cost = 10;
  s.data_wait_share = 0.6;
  telemetry::Evidence e;
  e.trace = t;
  e.loader_workers = 0;
  EXPECT_EQ(telemetry::diagnose(s, e)[0].rule, "loader-main");
}

TEST(TraceReader, ACpuOnlyTraceCountsSyncCallsButJudgesNoGpuRow) {
  auto t = read("cpu-legacy.json");  // torch 1.13's legacy profiler: a bare array, no cat
  EXPECT_FALSE(t.cuda);
  EXPECT_EQ(t.steps, 5);
  EXPECT_EQ(t.syncs_per_step, 1);
  EXPECT_GT(t.fetch_share, 0);
  auto f = diagnose_with(t);
  for (const auto& x : f) EXPECT_FALSE(x.rule.rfind("trace-", 0) == 0 && !x.note) << x.rule;
  bool said = false;
  for (const auto& x : f) said = said || x.rule == "trace-cpu-only";
  EXPECT_TRUE(said);
}

TEST(TraceReader, BadInputIsAnErrorNotACrash) {
  std::istringstream a("{\"traceEvents\": [ {\"ph\": \"X\", ");
  EXPECT_FALSE(telemetry::read_trace(a));
  std::istringstream b("{\"traceEvents\": []}");
  EXPECT_FALSE(telemetry::read_trace(b));  // no steps
  EXPECT_FALSE(telemetry::read_trace_file("/nonexistent/trace.json"));
}

TEST(TraceReader, PastTheCapEventsAreCountedNotKept) {
  std::ifstream in(kTraces + "launch.json");
  auto t = telemetry::read_trace(in, 1000);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->truncated);
  EXPECT_EQ(t->kept, 1000u);
  EXPECT_GT(t->events, 1000u);
}

}  // namespace
}  // namespace nodus
