// The trace reader on traces of known shape (tests/data/telemetry/traces/, written by
// bench/make_trace.py: torch 2.x Kineto layout; cpu-legacy.json is Debian's torch 1.13 CPU
// profiler), and the diagnosis rows that only a trace can fire; the lines the GPU waited for
// on traces written here.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
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

// A trace of 3 profiled steps of 50 ms in Kineto's layout (as bench/make_trace.py writes),
// times in us. Each step: get_batch (train.py line 116) runs 30 ms with the GPU idle, 10 ms of
// kernels, an aten::item at train.py line 323 (in main) that waits for them and 5 ms of Python
// after it with the GPU idle, 3 ms of kernels, then 2 ms with the GPU idle: 1 ms of Python and
// 1 ms in DataLoader __next__. `main_frame`: main's frame (begun before the profiler) spans it
// all; without it the item, the Python and the fetch are in no frame of the job's own.
std::string idle_trace(bool cuda, bool main_frame) {
  nlohmann::json ev = nlohmann::json::array();
  auto add = [&](const char* cat, const std::string& name, double ts, double dur, int tid = 100) {
    ev.push_back({{"ph", "X"},
                  {"cat", cat},
                  {"name", name},
                  {"pid", tid == 7 ? 0 : 100},
                  {"tid", tid},
                  {"ts", ts},
                  {"dur", dur},
                  {"args", nlohmann::json::object()}});
  };
  const double t0 = 1'700'000'000'000.0;
  if (main_frame)
    add("python_function", "/home/u/train.py(323): main", t0 - 1000, 3 * 50'000 + 2000);
  for (int s = 0; s < 3; ++s) {
    const double t = t0 + s * 50'000;
    add("user_annotation", "ProfilerStep#" + std::to_string(s + 7), t, 50'000);
    add("python_function", "/home/u/train.py(116): get_batch", t + 10, 29'990);
    // An installed package's frame inside: not the job's own, so never a site.
    add("python_function", "/home/u/.venv/lib/python3.11/site-packages/PIL/Image.py(3200): open",
        t + 100, 20'000);
    for (int k = 0; k < 10 && cuda; ++k)
      add("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
          t + 30'020 + k * 1000, 1000, 7);
    add("cpu_op", "aten::item", t + 39'000, 1030);
    add("cpu_op", "aten::_local_scalar_dense", t + 39'001, 1028);
    if (cuda) {
      add("cuda_runtime", "cudaStreamSynchronize", t + 39'010, 1015);
      add("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", t + 40'020, 2, 7);
      add("kernel", "void at::native::vectorized_elementwise_kernel<4, add>", t + 45'022, 2978, 7);
    }
    add("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 49'000, 1000);
  }
  return nlohmann::json{{"schemaVersion", 1}, {"traceEvents", ev}}.dump();
}

telemetry::TraceFacts read_text(const std::string& text) {
  std::istringstream in(text);
  auto f = telemetry::read_trace(in);
  EXPECT_TRUE(f) << (f ? "" : f.error().message);
  return f ? *f : telemetry::TraceFacts{};
}

const telemetry::IdleSite* idle_site(const telemetry::TraceFacts& t, const std::string& site,
                                     const std::string& kind) {
  for (const auto& x : t.idle_sites)
    if (x.site == site && x.kind == kind) return &x;
  return nullptr;
}

// What the idle sites put down, against the idle the shares report.
void expect_idle_sites_within_idle(const telemetry::TraceFacts& t) {
  double sum = 0;
  for (const auto& x : t.idle_sites) sum += x.share;
  EXPECT_LE(sum, t.idle_fetch_share + t.idle_sync_share + t.idle_inside_share + 1e-9);
}

TEST(TraceIdleSites, TheGpuIdleGoesToTheLineTheLoopWasAt) {
  auto t = read_text(idle_trace(true, true));
  ASSERT_TRUE(t.cuda);
  ASSERT_EQ(t.steps, 3);
  EXPECT_NEAR(t.step_us, 50'000, 1e-3);
  ASSERT_EQ(t.idle_sites.size(), 4u);
  // get_batch covers 29.99 of the 30.02 ms gap, main all of it: the innermost frame that covers
  // most of the gap is get_batch.
  const auto& top = t.idle_sites[0];
  EXPECT_EQ(top.site, "train.py, in get_batch()");
  EXPECT_EQ(top.kind, "host");
  EXPECT_EQ(top.what, "");
  EXPECT_NEAR(top.gpu_idle_us_per_step, 30'020, 1);
  EXPECT_NEAR(top.share, 30'020.0 / 50'000, 0.01);
  // The item's sync owns the 5 ms after it.
  const auto& item = t.idle_sites[1];
  EXPECT_EQ(item.site, "train.py, in main()");
  EXPECT_EQ(item.kind, "sync");
  EXPECT_EQ(item.what, "aten::item");
  EXPECT_NEAR(item.gpu_idle_us_per_step, 5000, 1);
  EXPECT_NEAR(item.share, 0.1, 0.01);
  // The same as the sync site reports.
  ASSERT_EQ(t.sync_sites.size(), 1u);
  EXPECT_EQ(t.sync_sites[0].site, item.site);
  EXPECT_NEAR(t.sync_sites[0].gpu_idle_us / 3, item.gpu_idle_us_per_step, 1e-6);
  // The last gap: 1 ms of main's own Python, 1 ms fetching.
  auto* host = idle_site(t, "train.py, in main()", "host");
  ASSERT_TRUE(host);
  EXPECT_NEAR(host->gpu_idle_us_per_step, 1000, 1);
  auto* fetch = idle_site(t, "train.py, in main()", "fetch");
  ASSERT_TRUE(fetch);
  EXPECT_EQ(fetch->what, "DataLoader __next__");
  EXPECT_NEAR(fetch->gpu_idle_us_per_step, 1000, 1);
  // All of the idle is put down somewhere, and nothing twice.
  expect_idle_sites_within_idle(t);
  double sum = 0;
  for (const auto& x : t.idle_sites) sum += x.share;
  EXPECT_NEAR(sum, t.idle_fetch_share + t.idle_sync_share + t.idle_inside_share, 1e-9);
  EXPECT_NEAR(t.idle_sync_share, item.share, 1e-9);
  EXPECT_NEAR(t.idle_fetch_share, fetch->share, 1e-9);
  // In the JSON, in ms.
  nlohmann::json j = t.to_json();
  ASSERT_EQ(j["idle_sites"].size(), 4u);
  EXPECT_EQ(j["idle_sites"][0]["site"], "train.py, in get_batch()");
  EXPECT_EQ(j["idle_sites"][0]["kind"], "host");
  EXPECT_EQ(j["idle_sites"][0]["what"], "");
  EXPECT_NEAR(j["idle_sites"][0]["gpu_idle_ms_per_step"].get<double>(), 30.02, 1e-3);
  EXPECT_NEAR(j["idle_sites"][0]["share"].get<double>(), top.share, 1e-12);
  EXPECT_EQ(j["idle_sites"][1]["kind"], "sync");
  EXPECT_EQ(j["idle_sites"][1]["what"], "aten::item");
}

TEST(TraceIdleSites, IdleInNoFrameOfTheJobsOwnIsKeptUnderNoFrame) {
  auto t = read_text(idle_trace(true, false));
  ASSERT_TRUE(t.cuda);
  ASSERT_EQ(t.idle_sites.size(), 4u);
  EXPECT_EQ(t.idle_sites[0].site, "train.py, in get_batch()");
  auto* host = idle_site(t, "(no Python frame)", "host");
  ASSERT_TRUE(host);
  EXPECT_NEAR(host->gpu_idle_us_per_step, 1000, 1);
  EXPECT_NEAR(host->share, 0.02, 1e-3);
  auto* sync = idle_site(t, "(no Python frame)", "sync");
  ASSERT_TRUE(sync);
  EXPECT_EQ(sync->what, "aten::item");
  EXPECT_NEAR(sync->gpu_idle_us_per_step, 5000, 1);
  ASSERT_TRUE(idle_site(t, "(no Python frame)", "fetch"));
  expect_idle_sites_within_idle(t);
  double sum = 0;
  for (const auto& x : t.idle_sites) sum += x.share;
  EXPECT_NEAR(sum, t.idle_fetch_share + t.idle_sync_share + t.idle_inside_share, 1e-9);
}

TEST(TraceIdleSites, ACpuOnlyTraceHasNone) {
  auto t = read_text(idle_trace(false, true));
  EXPECT_FALSE(t.cuda);
  EXPECT_EQ(t.steps, 3);
  EXPECT_TRUE(t.idle_sites.empty());
  EXPECT_TRUE(t.to_json()["idle_sites"].empty());
  auto legacy = read("cpu-legacy.json");
  EXPECT_TRUE(legacy.idle_sites.empty());
}

TEST(TraceIdleSites, TheTestTracesPutDownNoMoreThanTheirIdle) {
  for (const char* name : {"healthy.json", "sync.json", "launch.json", "fp32.json"}) {
    auto t = read(name);
    SCOPED_TRACE(name);
    EXPECT_LE(t.idle_sites.size(), 8u);
    expect_idle_sites_within_idle(t);
    for (size_t i = 1; i < t.idle_sites.size(); ++i)
      EXPECT_GE(t.idle_sites[i - 1].gpu_idle_us_per_step, t.idle_sites[i].gpu_idle_us_per_step);
  }
  // sync.json: the 3 ms of logging after each item goes to the item at train.py, in step().
  auto t = read("sync.json");
  ASSERT_FALSE(t.idle_sites.empty());
  EXPECT_EQ(t.idle_sites[0].site, "train.py, in step()");
  EXPECT_EQ(t.idle_sites[0].kind, "sync");
  EXPECT_EQ(t.idle_sites[0].what, "aten::item");
  EXPECT_NEAR(t.idle_sites[0].share, t.idle_sync_share, 1e-9);
}

}  // namespace
}  // namespace nodus
