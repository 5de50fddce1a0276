// Training loops without a DataLoader (tests/data/pytorch/nanogpt_style.py, generator_loop.py,
// hidden_fetch.py: scripts that know nothing of nodus) run unmodified under the real binary on
// CPU: nodus counts their optimizer steps, the tokens or samples each trains on, and the host
// time outside forward, backward and the optimizer, and each figure is held against the
// script's own printed "steady:" line over the same steps. Needs /usr/bin/python3 with torch
// (python3-torch); without it every test is skipped with a message saying so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli/fixtures.h"
#include "cli/nodus_process.h"
#include "measure/torch_fixture.h"

namespace nodus::testing {
namespace {

// The script's own "steady:" line: "steady: 12.3 ms/iter, 456.7 tokens/s, 8.9 iters/s,
// get_batch share 0.0123" (names differ by script; the numbers come in this order).
struct Own {
  double ms = 0, rate = 0, per_s = 0, share = 0;
};

Own own_steady(const std::string& out) {
  std::smatch m;
  static const std::regex kNanogpt(
      R"(steady: ([0-9.]+) ms/iter, ([0-9.]+) tokens/s, ([0-9.]+) iters/s, get_batch share ([0-9.]+))");
  static const std::regex kStep(
      R"(steady: ([0-9.]+) ms/step, ([0-9.]+) (?:tokens|samples)/s, fetch share ([0-9.]+))");
  Own o;
  if (std::regex_search(out, m, kNanogpt)) {
    o.ms = std::stod(m[1]), o.rate = std::stod(m[2]), o.per_s = std::stod(m[3]);
    o.share = std::stod(m[4]);
  } else if (std::regex_search(out, m, kStep)) {
    o.ms = std::stod(m[1]), o.rate = std::stod(m[2]), o.share = std::stod(m[3]);
    o.per_s = 1000.0 / o.ms;
  } else {
    ADD_FAILURE() << "no steady line in the script's output:\n" << out;
  }
  return o;
}

std::string logs(NodusHome& home, const std::string& id) { return home.run({"logs", id}).out; }

// The script's 10 skipped steps are nodus's warm-up: both measure the same steps.
std::vector<std::string> run_args(std::vector<std::string> script) {
  std::vector<std::string> a = {"run", "--warmup", "10", "--timeout", "300s", "--", kPython};
  a.insert(a.end(), script.begin(), script.end());
  return a;
}

// Loops that compute their loss outside the model (F.cross_entropy on its logits) spend that
// host time outside forward, backward and the optimizer too, which their own timing of the fetch
// leaves out: nodus's share may be above the fetch's by that much, never below it.
void expect_share(double nodus, double fetch) {
  EXPECT_GE(nodus, fetch - 0.01) << "nodus's out-of-step share against the script's fetch share";
  EXPECT_LE(nodus, fetch + 0.035) << "nodus's out-of-step share against the script's fetch share";
}

void expect_within(double nodus, double own, double rel, const char* what) {
  EXPECT_NEAR(nodus, own, rel * own) << what << ": nodus " << nodus << ", the script's " << own;
}

TEST(StepLoops, ANanogptStyleLoopGetsStepsTokensAndItsOutOfStepShare) {
  REQUIRE_TORCH();
  NodusHome home;
  // Fast get_batch, then one that sleeps 40 ms: most of each iteration outside the step.
  for (const char* slow : {"0", "40"}) {
    SCOPED_TRACE(std::string("--slow-batch-ms ") + slow);
    auto r = home.run(run_args({kData + "nanogpt_style.py", "--n-layer", "1", "--batch-size", "4",
                                "--block-size", "32", "--grad-accum", "2", "--iters", "70",
                                "--log-interval", "10", "--slow-batch-ms", slow}));
    ASSERT_EQ(r.code, 0) << r.err;
    auto ps = nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out);
    const std::string id = std::to_string(ps[0]["id"].get<int64_t>());
    Own own = own_steady(logs(home, id));
    auto s = show_json(home, id)["stats"];
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(s["instrumentation"]["why"],
              "Python job: optimizer steps timed by nodus's hook (no DataLoader drove the loop)");
    EXPECT_EQ(s["throughput_metric"], "tokens_per_sec");
    EXPECT_EQ(s["throughput_source"], "instrumented");
    ASSERT_TRUE(s["throughput"].is_number());
    ASSERT_TRUE(s["instrumented_steps_per_sec"].is_number());
    expect_within(s["throughput"].get<double>(), own.rate, 0.02, "tokens/s");
    expect_within(s["instrumented_steps_per_sec"].get<double>(), own.per_s, 0.02, "steps/s");
    ASSERT_TRUE(s["data_wait_share"].is_number());
    EXPECT_NEAR(s["data_wait_share"].get<double>(), own.share, 0.02);
    EXPECT_EQ(s["data_wait_source"],
              "instrumented: host time outside forward, backward and the optimizer");
    EXPECT_EQ(s["optimizer_steps"]["steps"], 70);
    // 4 sequences of 32 tokens per micro-batch, 2 micro-batches per step.
    EXPECT_EQ(s["optimizer_steps"]["tokens"].get<int64_t>(), 70 * 2 * 4 * 32);
    auto show = home.run({"show", id});
    EXPECT_NE(show.out.find("70 optimizer steps"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("256 tokens per step"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("tokens_per_sec (instrumented)"), std::string::npos) << show.out;
  }
}

TEST(StepLoops, AGeneratorLoopCountsSamplesAndASlowFetchIsTheLoopsNotTheLoaders) {
  REQUIRE_TORCH();
  NodusHome home;
  auto r = home.run(run_args({kData + "generator_loop.py", "--steps", "120", "--fetch-ms", "15"}));
  ASSERT_EQ(r.code, 0) << r.err;
  Own own = own_steady(logs(home, "1"));
  auto s = show_json(home, "1")["stats"];
  SCOPED_TRACE(s.dump());
  EXPECT_EQ(s["throughput_metric"], "samples_per_sec");
  expect_within(s["throughput"].get<double>(), own.rate, 0.02, "samples/s");
  expect_share(s["data_wait_share"].get<double>(), own.share);
  EXPECT_GT(s["data_wait_share"].get<double>(), 0.10);
  // Its diagnosis is the loop's own fetching, not a DataLoader's num_workers.
  ASSERT_FALSE(s["findings"].empty());
  EXPECT_EQ(s["findings"][0]["rule"], "loop-host-bound");
  EXPECT_EQ(s["findings"][0]["fix"].get<std::string>().find("raise num_workers"),
            std::string::npos);
}

TEST(StepLoops, AFetchHiddenInTheStepFunctionIsStillOutsideTheStep) {
  REQUIRE_TORCH();
  NodusHome home;
  auto r = home.run(run_args({kData + "hidden_fetch.py", "--steps", "120", "--fetch-ms", "15"}));
  ASSERT_EQ(r.code, 0) << r.err;
  Own own = own_steady(logs(home, "1"));
  auto s = show_json(home, "1")["stats"];
  SCOPED_TRACE(s.dump());
  EXPECT_EQ(s["throughput_metric"], "tokens_per_sec");
  expect_within(s["throughput"].get<double>(), own.rate, 0.02, "tokens/s");
  expect_share(s["data_wait_share"].get<double>(), own.share);
}

// The line of `path` (1-based) that holds `text`, as "file.py:N"; "" when none does.
std::string line_of(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos)
      return path.substr(path.rfind('/') + 1) + ":" + std::to_string(n);
  return "";
}

// --profile on a loop without a DataLoader: the profiler steps on optimizer steps, and the lines
// the loop spent its step on outside the model are named: the slow get_batch's sleep and the
// per-iteration loss.item(), by file and line.
TEST(StepLoops, AProfileOfStepsNamesTheSlowGetBatchAndThePerStepItem) {
  REQUIRE_TORCH();
  NodusHome home;
  const std::string script = kData + "nanogpt_style.py";
  auto r = home.run({"run",       "--profile",
                     "--warmup",  "3",
                     "--timeout", "300s",
                     "--",        kPython,
                     script,      "--n-layer",
                     "1",         "--batch-size",
                     "4",         "--block-size",
                     "32",        "--grad-accum",
                     "2",         "--iters",
                     "25",        "--log-interval",
                     "10",        "--slow-batch-ms",
                     "20"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto s = show_json(home, "1")["stats"];
  SCOPED_TRACE(s["profile"].dump());
  ASSERT_TRUE(s["profile"].contains("trace")) << "a step trace was written";
  const auto& meta = s["profile"]["meta"];
  EXPECT_EQ(meta["unit"], "optimizer step");
  const auto& lines = meta["lines"];
  ASSERT_FALSE(lines["functions"].empty());
  EXPECT_EQ(lines["functions"][0]["function"], "get_batch");
  EXPECT_EQ(lines["functions"][0]["site"], line_of(script, "time.sleep(a.slow_batch_ms"));
  // Two 20 ms sleeps in a step of well over 40 ms: most of it.
  EXPECT_GT(lines["functions"][0]["share"].get<double>(), 0.2);
  bool item = false;
  for (const auto& y : lines["syncs"])
    if (y["what"] == "Tensor.item" && y["site"] == line_of(script, "lossf = loss.item()")) {
      item = true;
      EXPECT_EQ(y["per_step"], 1.0);
    }
  EXPECT_TRUE(item) << "the per-iteration loss.item() is named by its line";
  ASSERT_FALSE(s["findings"].empty());
  EXPECT_EQ(s["findings"][0]["rule"], "loop-host-bound");
  EXPECT_EQ(s["findings"][0]["fix"].get<std::string>().rfind(
                "first get_batch at " + line_of(script, "time.sleep(a.slow_batch_ms"), 0),
            0u)
      << s["findings"][0]["fix"];
  auto show = home.run({"show", "1"});
  EXPECT_NE(show.out.find("outside step     get_batch at nanogpt_style.py:"), std::string::npos)
      << show.out;
  EXPECT_NE(
      show.out.find("sync Tensor.item 1 per step at " + line_of(script, "lossf = loss.item()")),
      std::string::npos)
      << show.out;
}

// FLOPs counted by PyTorch itself over one optimizer step, against a stack of Linear layers
// whose FLOPs are known exactly, and MFU against a peak the test's catalog declares.
TEST(StepLoops, FlopsPerStepAreCountedExactlyAndMfuIsAgainstTheCatalogsPeak) {
  REQUIRE_TORCH();
  NodusHome home;
  // A TEST GPU at $900/h whose dense BF16 peak is declared 0.05 TFLOPS: a CPU's reach.
  const std::string prices = home.file("peak-prices.json");
  write_file(prices, R"({"gpus": [
  {"type": "TEST", "usd_per_gpu_hour": 900, "source": "tests", "checked": "2026-12-07",
   "device_names": ["Test GPU"],
   "peak_tflops": {"bf16": 0.05, "tf32": 0.025, "fp32": 0.0125, "source": "tests"}}]}
)");
  const int64_t b = 64, d = 512, layers = 4, accum = 2;
  auto r = home.run({"run",          "--gpu",
                     "TEST",         "--warmup",
                     "10",           "--timeout",
                     "300s",         "--",
                     kPython,        kData + "linear_stack.py",
                     "--batch",      std::to_string(b),
                     "--dim",        std::to_string(d),
                     "--layers",     std::to_string(layers),
                     "--grad-accum", std::to_string(accum),
                     "--steps",      "60"},
                    {{"NODUS_LOCAL_GPUS", "TEST:1"},
                     {"NODUS_PRICES", prices},
                     {"NODUS_NVIDIA_SMI", kData + "nvidia-smi-standin.sh"},
                     {"STANDIN_UTIL", "90"}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto s = show_json(home, "1")["stats"];
  SCOPED_TRACE(s.dump());
  ASSERT_TRUE(s.contains("mfu"));
  const auto& m = s["mfu"];
  // Forward: every layer; backward: every weight's gradient, and the input's gradient of every
  // layer but the first (its input needs none); each a B x D x D matrix multiply.
  const double exact = static_cast<double>(accum) * 2.0 * b * d * d * (layers + 2 * layers - 1);
  EXPECT_NEAR(m["flops_per_step"].get<double>(), exact, 0.01 * exact);
  const double steps_per_sec = s["instrumented_steps_per_sec"].get<double>();
  const double expected_mfu = m["flops_per_step"].get<double>() * steps_per_sec / 0.05e12;
  ASSERT_TRUE(m["value"].is_number());
  EXPECT_NEAR(m["value"].get<double>(), expected_mfu, 0.01 * expected_mfu);
  EXPECT_EQ(m["peak_of"], "bf16");
  EXPECT_EQ(m["precision"], "fp32");
  // Its steps/s are the script's own, within 2%, the FLOP-counted step left out.
  std::smatch own;
  const std::string out = logs(home, "1");
  ASSERT_TRUE(
      std::regex_search(out, own, std::regex(R"(steady: [0-9.]+ ms/step, ([0-9.]+) steps/s)")))
      << out;
  expect_within(steps_per_sec, std::stod(own[1]), 0.02, "steps/s");
  auto show = home.run({"show", "1"});
  EXPECT_NE(show.out.find("of TEST's 0.05 TFLOPS dense BF16 (matmuls in fp32"), std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("/h of arithmetic paid for and unused"), std::string::npos) << show.out;
}

// Two gloo ranks without a DataLoader, rank 1's batches 20 ms late: each rank reports on its
// own, they step together, and rank 1 is named as the one the other waits for.
TEST(StepLoops, TwoRanksOfStepsNameTheOneThatLagsOutsideItsStep) {
  REQUIRE_TORCH();
  NodusHome home;
  auto r =
      home.run({"run", "--warmup", "10", "--timeout", "120s", "--", kPython, kData + "ddp_steps.py",
                "--steps", "150", "--slow-rank", "1", "--fetch-ms", "20"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto s = show_json(home, "1")["stats"];
  SCOPED_TRACE(s.dump());
  EXPECT_EQ(s["ranks"], 2);
  ASSERT_EQ(s["per_rank"].size(), 2u);
  EXPECT_LT(s["per_rank"][0]["data_wait"].get<double>(), 0.10);
  EXPECT_GT(s["per_rank"][1]["data_wait"].get<double>(), 0.50);
  EXPECT_EQ(s["slowest_rank"], 1);
  EXPECT_NE(s["ranks_note"].get<std::string>().find("rank 1 ("), std::string::npos);
  EXPECT_NE(s["ranks_note"].get<std::string>().find("It waits on its batch fetch outside the step"),
            std::string::npos);
  // Rank 0 waits at each gradient sync for rank 1's 20 ms fetch: that share of each step.
  const double step_s = s["instrumented_step_time"].get<double>();
  EXPECT_NEAR(s["others_wait_share"].get<double>(), 0.020 / step_s, 0.1);
  EXPECT_GT(s["slowest_rank_own_ratio"].get<double>(), 2);
  EXPECT_EQ(s["findings"][0]["rule"], "rank-lags");
  EXPECT_NE(s["findings"][0]["fix"].get<std::string>().find("fetch rank 1's batches ahead"),
            std::string::npos);
  // Ranks step together: steps/s is a rank's, not their sum.
  EXPECT_NEAR(s["instrumented_steps_per_sec"].get<double>(), 1 / step_s, 0.05 / step_s);
}

// A Python job that trains nothing the hook can see: what was missing is said, and nobody is
// told to run under nodus the job that ran under it.
TEST(StepLoops, AJobWithoutStepsOrBatchesIsToldWhatWasMissing) {
  REQUIRE_TORCH();
  NodusHome home;
  auto env = gpu_env(home, 20);
  auto r = home.run({"run", "--gpu", "TEST", "--warmup", "0", "--", kPython, "-c",
                     "import torch, time\nx = torch.ones(8)\nend = time.time() + 4\n"
                     "while time.time() < end: x = x * 1.0001\n"},
                    env);
  ASSERT_EQ(r.code, 0) << r.err;
  auto s = show_json(home, "1")["stats"];
  SCOPED_TRACE(s.dump());
  EXPECT_EQ(s["instrumentation"]["why"],
            "Python job: nodus's hook saw no DataLoader batch and no torch.optim optimizer step");
  ASSERT_FALSE(s["findings"].empty());
  const std::string fix = s["findings"][0]["fix"];
  EXPECT_EQ(fix.find("under nodus"), std::string::npos) << fix;
  EXPECT_NE(fix.find("saw no DataLoader batch and no optimizer step"), std::string::npos) << fix;
}

// The sweep of the issue: batch 4 against 16, ranked by tokens/s, and by how much.
TEST(StepLoops, ASweepOverBatchSizeNamesTheBestCellByTokensPerSecond) {
  REQUIRE_TORCH();
  NodusHome home;
  // One TEST GPU at $1 a second (a stand-in nvidia-smi): the cells run one after the other, and
  // each is billed, so the cost per token can be compared.
  auto r = home.run({"sweep",
                     "--gpu",
                     "TEST",
                     "--param",
                     "bs=2,16",
                     "--warmup",
                     "10",
                     "--timeout",
                     "300s",
                     "--format",
                     "json",
                     "--",
                     kPython,
                     kData + "nanogpt_style.py",
                     "--n-layer",
                     "1",
                     "--block-size",
                     "32",
                     "--grad-accum",
                     "2",
                     "--iters",
                     "60",
                     "--log-interval",
                     "20",
                     "--batch-size",
                     "{bs}"},
                    gpu_env(home, 90));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  ASSERT_EQ(j["cells"].size(), 2u);
  std::vector<double> own;
  for (const auto& c : j["cells"]) {
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(c["throughput_metric"], "tokens_per_sec");
    own.push_back(own_steady(logs(home, std::to_string(c["job_id"].get<int64_t>()))).rate);
    expect_within(c["throughput"].get<double>(), own.back(), 0.02, "tokens/s");
  }
  const double ratio =
      j["cells"][1]["throughput"].get<double>() / j["cells"][0]["throughput"].get<double>();
  ASSERT_GT(own[1], own[0] * 1.06) << "the fixture itself should run batch 16 faster per token";
  EXPECT_EQ(j["best_cell"], 2) << j.dump();
  const std::string summary = j["summary"];
  char ratio_text[32];
  std::snprintf(ratio_text, sizeof ratio_text, ratio >= 10 ? "%.0fx" : "%.1fx", ratio);
  EXPECT_EQ(
      summary.rfind(std::string("bs=16: ") + ratio_text + " the tokens/s of the runner-up bs=2", 0),
      0u)
      << summary;
  EXPECT_NE(summary.find("x the cost per token"), std::string::npos) << summary;
  auto table = home.run({"show", "s1"});
  EXPECT_NE(table.out.find("TOKENS/S"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("$/M TOKENS"), std::string::npos) << table.out;
  // The report names the unit too (it read "tokens_per_sec" and "$/M samples").
  auto md = home.run({"report", "s1", "--format", "md"});
  ASSERT_EQ(md.code, 0) << md.err;
  EXPECT_NE(md.out.find("tokens/s"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("$/M tokens"), std::string::npos) << md.out;
}

}  // namespace
}  // namespace nodus::testing
