// The pieces of measuring without changing the job, one at a time: which commands get the
// Python hook, the hook's figures across ranks, phases, and the /proc parsers of the I/O
// evidence.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/measure.h"
#include "telemetry/diagnosis.h"
#include "telemetry/io_evidence.h"
#include "telemetry/phases.h"
#include "telemetry/pyhook.h"
#include "temp_dir.h"

namespace nodus {
namespace {

using telemetry::python_ignores_hook;
using telemetry::runs_python;

TEST(PyHook, PythonCommandsAndLaunchers) {
  EXPECT_TRUE(runs_python({"python", "train.py"}));
  EXPECT_TRUE(runs_python({"/usr/bin/python3", "train.py"}));
  EXPECT_TRUE(runs_python({"python3.11", "-u", "train.py"}));
  EXPECT_TRUE(runs_python({"torchrun", "--nproc_per_node", "8", "train.py"}));
  EXPECT_TRUE(runs_python({"accelerate", "launch", "train.py"}));
  EXPECT_TRUE(runs_python({"env", "A=1", "python3", "train.py"}));
  EXPECT_FALSE(runs_python({"sleep", "20"}));
  EXPECT_FALSE(runs_python({"sh", "-c", "python train.py"}));  // a shell's child: not known
  EXPECT_FALSE(runs_python({"./pythonic-tool"}));
  EXPECT_FALSE(runs_python({}));
}

TEST(PyHook, FlagsThatMakePythonIgnoreTheHook) {
  EXPECT_NE(python_ignores_hook({"python3", "-I", "t.py"}), std::nullopt);
  EXPECT_NE(python_ignores_hook({"python3", "-uE", "t.py"}), std::nullopt);
  EXPECT_NE(python_ignores_hook({"python3", "-S", "t.py"}), std::nullopt);
  EXPECT_NE(python_ignores_hook({"python3", "-W", "ignore", "-I", "t.py"}), std::nullopt);
  EXPECT_EQ(python_ignores_hook({"python3", "t.py", "-I"}), std::nullopt);  // the script's
  EXPECT_EQ(python_ignores_hook({"python3", "-m", "pkg", "-E"}), std::nullopt);
  EXPECT_EQ(python_ignores_hook({"python3", "-c", "print(1)", "-I"}), std::nullopt);
  EXPECT_EQ(python_ignores_hook({"python3", "-Wignore", "t.py"}), std::nullopt);
  EXPECT_EQ(python_ignores_hook({"torchrun", "-I", "t.py"}), std::nullopt);
}

TEST(PyHook, IsWrittenOnlyIntoAFolderOfThisUsersThatNoOneElseCanWrite) {
  testing::TempDir tmp;
  const std::string own = tmp.path() + "/own.hook";
  ASSERT_TRUE(telemetry::write_pyhook(own));
  ASSERT_TRUE(telemetry::write_pyhook(own));  // again: the same folder is this user's
  struct stat st {};
  ASSERT_EQ(::stat((own + "/sitecustomize.py").c_str(), &st), 0);
  // Planted in a shared folder: a group-writable folder, a link, or a file in its place.
  const std::string shared = tmp.path() + "/open.hook";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  auto refused = telemetry::write_pyhook(shared);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("only it can write"), std::string::npos);
  EXPECT_NE(::access((shared + "/sitecustomize.py").c_str(), F_OK), 0);
  const std::string link = tmp.path() + "/link.hook";
  ASSERT_EQ(::symlink(own.c_str(), link.c_str()), 0);
  EXPECT_FALSE(telemetry::write_pyhook(link));
  const std::string file = tmp.path() + "/file.hook";
  ASSERT_EQ(::close(::open(file.c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  EXPECT_FALSE(telemetry::write_pyhook(file));
}

TEST(PyHook, TheEmbeddedSourceIsTheFileInTheRepository) {
  auto text = telemetry::pyhook_source();
  EXPECT_NE(text.find("def _nodus_chain"), std::string_view::npos);
  EXPECT_NE(text.find("_BaseDataLoaderIter"), std::string_view::npos);
  EXPECT_GT(text.size(), 4000u);
}

MetricPoint pt(double t, const std::string& name, double v) { return {t, name, v}; }

TEST(HookPoints, RanksAddThroughputAndAverageDataWaitAfterTheirSteadyStart) {
  std::vector<MetricPoint> p = {
      pt(10, "hook.r0.samples_per_sec", 1),  // warm-up: left out
      pt(10, "hook.r0.data_wait", 0.9),
      pt(11, "hook.r0.samples_per_sec", 100),
      pt(11, "hook.r0.data_wait", 0.2),
      pt(12, "hook.r0.samples_per_sec", 120),
      pt(12, "hook.r0.data_wait", 0.4),
      pt(11, "hook.r1.samples_per_sec", 90),
      pt(11, "hook.r1.data_wait", 0.1),
      pt(11, "samples_per_sec", 5),  // the job's own: not the hook's
  };
  auto agg = engine::aggregate_hook_points(p, {{0, 10}, {1, 10}});
  EXPECT_TRUE(agg.steady);
  EXPECT_EQ(agg.ranks, 2);
  EXPECT_DOUBLE_EQ(*agg.samples_per_sec, 110 + 90);
  EXPECT_DOUBLE_EQ(*agg.data_wait, (0.3 + 0.1) / 2);
  ASSERT_EQ(agg.per_rank.size(), 2u);
  EXPECT_DOUBLE_EQ(agg.per_rank[0].samples_per_sec, 110);
  EXPECT_DOUBLE_EQ(*agg.per_rank[0].data_wait, 0.3);
  EXPECT_DOUBLE_EQ(agg.per_rank[1].samples_per_sec, 90);
  EXPECT_DOUBLE_EQ(*agg.per_rank[1].data_wait, 0.1);
  EXPECT_FALSE(agg.per_rank[1].step_time);
}

engine::RankFigures figures(double sps, std::optional<double> data_wait) {
  engine::RankFigures f;
  f.samples_per_sec = sps;
  f.data_wait = data_wait;
  return f;
}

TEST(SlowestRank, ARankBelowTheFastestsThroughputIsNamed) {
  auto s =
      engine::slowest_rank({{0, figures(100, 0.1)}, {1, figures(80, 0.1)}, {2, figures(99, 0.5)}},
                           {{0, "dev1"}, {1, "dev2"}});
  ASSERT_TRUE(s.rank);
  EXPECT_EQ(*s.rank, 1);
  EXPECT_EQ(s.text, "rank 1 (dev2) is slowest: 80.0 samples/s against 100 on rank 0 (dev1)");
}

TEST(SlowestRank, RanksInStepNameTheOneThatWaitsLongestForData) {
  // Data-parallel ranks sync at every step: the same throughput, the lagging rank in its loader.
  auto s = engine::slowest_rank({{0, figures(50, 0.04)}, {1, figures(49.5, 0.61)}}, {});
  ASSERT_TRUE(s.rank);
  EXPECT_EQ(*s.rank, 1);
  EXPECT_NE(s.text.find("rank 1 waits longest for data: 61% against 4% on rank 0"),
            std::string::npos)
      << s.text;
}

TEST(SlowestRank, NoneIsNamedWhenNoRankLagsOrThereIsOneRank) {
  auto s = engine::slowest_rank({{0, figures(50, 0.10)}, {1, figures(49, 0.12)}}, {});
  EXPECT_FALSE(s.rank);
  EXPECT_EQ(s.text, "no rank lags: throughput within 5%, data wait within 5 points");
  EXPECT_FALSE(engine::slowest_rank({{0, figures(50, 0.9)}}, {}).rank);
  EXPECT_EQ(engine::slowest_rank({{0, figures(50, {})}, {1, figures(50, {})}}, {}).text,
            "no rank lags: throughput within 5%");
}

TEST(HookPoints, WarmUpOnlyIsUsedAndSaidSo) {
  std::vector<MetricPoint> p = {pt(10, "hook.r0.samples_per_sec", 50)};
  auto agg = engine::aggregate_hook_points(p, {});
  EXPECT_FALSE(agg.steady);
  EXPECT_DOUBLE_EQ(*agg.samples_per_sec, 50);
  EXPECT_FALSE(agg.data_wait);
  EXPECT_FALSE(engine::aggregate_hook_points({}, {}).samples_per_sec);
}

TEST(Phases, WarmupParsesBatchesOrDurations) {
  EXPECT_EQ(telemetry::parse_warmup("20")->batches, 20);
  EXPECT_DOUBLE_EQ(*telemetry::parse_warmup("5s")->seconds, 5);
  EXPECT_DOUBLE_EQ(*telemetry::parse_warmup("1m")->seconds, 60);
  // No warm-up: "0s" (and "0", no batches); other durations stay positive.
  EXPECT_DOUBLE_EQ(*telemetry::parse_warmup("0s")->seconds, 0);
  EXPECT_EQ(telemetry::parse_warmup("0")->batches, 0);
  EXPECT_FALSE(telemetry::parse_warmup("-1s").has_value());
  EXPECT_FALSE(telemetry::parse_warmup("s").has_value());
  EXPECT_FALSE(telemetry::parse_warmup(""));
  EXPECT_FALSE(telemetry::parse_warmup("-3"));
  EXPECT_FALSE(telemetry::parse_warmup("fast"));
  EXPECT_FALSE(telemetry::parse_warmup("99999999999"));
}

TEST(Phases, SteadyFiguresExcludeStartUpButMoneyStaysWholeJob) {
  telemetry::SummaryInput in;
  in.cost = 10;
  in.wall_s = 20;
  for (int t = 0; t < 20; ++t) {
    GpuSample g;
    g.t = t;
    g.util_gpu = t < 10 ? 0.0 : 90.0;
    in.gpu.push_back(g);
  }
  telemetry::Phases ph;
  ph.start_t = 0;
  ph.end_t = 20;
  ph.first_batch_t = 8;
  ph.steady_t = 10;
  ph.source = "instrumented";
  auto s = telemetry::steady_summary(in, ph);
  EXPECT_DOUBLE_EQ(*s.util_mean, 90);
  EXPECT_DOUBLE_EQ(s.cost, 10);
  EXPECT_DOUBLE_EQ(*s.idle_usd, 10 * (1 - 0.45));  // whole-job util 45%
  EXPECT_EQ(telemetry::describe_phases(ph, 0.5),
            "start-up 8.0 s, $4.00; warm-up 2.0 s; steady 10.0 s (instrumented)");
  telemetry::Phases unknown;
  EXPECT_EQ(telemetry::describe_phases(unknown, 1), "");
  EXPECT_DOUBLE_EQ(*telemetry::steady_summary(in, unknown).util_mean, 45);
}

// conclude() streams the series (engine/series_source.h): phases from the first job report plus
// the warm-up, steady figures from the slice after it, money and util_mean_job whole-job.
TEST(Conclude, StreamedSeriesGiveSteadyFiguresAndWholeJobMoney) {
  engine::SuperviseOptions options;  // --warmup 5s, throughput samples_per_sec
  engine::Measurement measure(options, nlohmann::json::object());
  JobRecord job;
  job.started_at = 0;
  job.ended_at = 40;
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3.6;
  telemetry::SummaryInput in;
  for (int t = 0; t < 40; ++t) {
    GpuSample g;
    g.t = t;
    g.util_gpu = t < 7 ? 0 : 90;
    in.gpu.push_back(g);
  }
  for (int t = 39; t >= 2; --t) {  // out of order: visited by time all the same
    in.metrics.push_back(pt(t, "samples_per_sec", t < 7 ? 10 : 100));
    in.metrics.push_back(pt(t, "data_wait", t < 7 ? 0.9 : 0.2));
  }
  in.metrics.push_back(pt(20, "hook.r0.samples_per_sec", 50));  // the hook's: not the job's
  auto series = engine::memory_series(in);
  auto c = measure.conclude(job, *series, 0.04, 40);
  EXPECT_EQ(c.stats["phases"]["source"], "job metrics");
  EXPECT_DOUBLE_EQ(c.stats["phases"]["startup_s"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(c.stats["phases"]["steady_s"].get<double>(), 33);  // from t = 2 + 5
  EXPECT_DOUBLE_EQ(*c.summary.util_mean, 90);
  EXPECT_EQ(c.summary.n_samples, 33);
  EXPECT_DOUBLE_EQ(c.stats["util_mean_job"].get<double>(), 33 * 90 / 40.0);
  EXPECT_NEAR(*c.summary.idle_usd, 0.04 * (1 - 33 * 90 / 4000.0), 1e-12);
  EXPECT_DOUBLE_EQ(*c.throughput, 100);
  EXPECT_NEAR(*c.summary.data_wait_share, 0.2, 1e-12);
  EXPECT_EQ(c.stats["throughput_source"], "job");
  EXPECT_DOUBLE_EQ(c.stats["instrumented_throughput"].get<double>(), 50);
}

TEST(IoEvidence, ParsesProcFiles) {
  EXPECT_EQ(telemetry::parse_read_bytes("rchar: 5\nwchar: 1\nread_bytes: 4096\nwrite_bytes: 0\n"),
            4096u);
  EXPECT_EQ(telemetry::parse_read_bytes("rchar: 5\n"), std::nullopt);
  auto cpu = telemetry::parse_cpu_iowait("cpu  10 0 10 70 10 0 0 0 0 0\ncpu0 1 2 3\n");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->first, 10u);
  EXPECT_EQ(cpu->second, 100u);
  EXPECT_FALSE(telemetry::parse_cpu_iowait("intr 1 2 3"));
}

TEST(IoEvidence, ParsesCgroupIoStat) {
  EXPECT_EQ(
      telemetry::parse_io_stat_rbytes("8:0 rbytes=4096 wbytes=10 rios=1 wios=1 dbytes=0 dios=0\n"
                                      "259:0 rbytes=1000 wbytes=0 rios=2 wios=0 dbytes=0 dios=0\n"),
      5096u);
  EXPECT_EQ(telemetry::parse_io_stat_rbytes("8:0 wbytes=10 wios=1\n"), std::nullopt);
  EXPECT_EQ(telemetry::parse_io_stat_rbytes("8:0 xrbytes=5 rbytes=7\n"), 7u);
}

TEST(IoEvidence, ACgroupsIoStatIsPreferredAndCountsFromTheRebase) {
  testing::TempDir tmp;
  const std::string& dir = tmp.path();
  auto put = [&](const std::string& text) {
    FILE* f = std::fopen((dir + "/io.stat").c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  telemetry::IoTracker io(getpid());
  io.watch_cgroup(dir);
  put("8:0 rbytes=1048576 wbytes=0\n");  // start-up reads (Python importing torch)
  io.sample();
  put("8:0 rbytes=3145728 wbytes=0\n");
  io.sample();
  io.rebase();
  put("8:0 rbytes=13631488 wbytes=0\n");  // 10 MiB in the steady state
  io.sample();
  auto e = io.evidence();
  ASSERT_TRUE(e.cgroup_read_bytes);
  EXPECT_EQ(*e.cgroup_read_bytes, 10u << 20);
  EXPECT_EQ(e.source(), "cgroup io.stat");
  EXPECT_TRUE(e.cgroup_note.empty());

  telemetry::IoTracker none(getpid());
  none.watch_cgroup("/nonexistent-nodus-cgroup");
  none.sample();
  auto n = none.evidence();
  EXPECT_FALSE(n.cgroup_read_bytes);
  EXPECT_EQ(n.source(), "/proc/PID/io");
  EXPECT_NE(n.cgroup_note.find("io.stat"), std::string::npos);
}

TEST(Diagnosis, TheLoaderInTheMainProcessComesFirstEvenWithTheCoresBusy) {
  // The H200's workers=0 cell: torch's intra-op threads filled the cores, data wait 88%.
  telemetry::Summary s;
  s.data_wait_share = 0.88;
  s.util_mean = 12;
  s.cpu_saturation = 0.95;
  s.cores = 16;
  telemetry::Evidence e;
  e.loader_workers = 0;
  auto f = telemetry::diagnose(s, e);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rule, "loader-main");
  EXPECT_NE(f[0].fix.find("num_workers > 0"), std::string::npos);
  EXPECT_EQ(f[0].fix.find("will not help"), std::string::npos);
  // With workers running, the same cores are the loader's: cpu-bound.
  e.loader_workers = 8;
  EXPECT_EQ(telemetry::diagnose(s, e)[0].rule, "cpu-bound");
  // Unknown workers (a job's own metrics, no hook): as before.
  e.loader_workers.reset();
  EXPECT_EQ(telemetry::diagnose(s, e)[0].rule, "cpu-bound");
}

TEST(IoEvidence, TracksItsOwnReadsFromProc) {
  telemetry::IoTracker io(getpid());
  io.sample();
  auto e = io.evidence();
  EXPECT_TRUE(e.readable);
  EXPECT_EQ(e.read_bytes, 0u);  // nothing counted before the first sample
}

TEST(HookMetrics, OnlyTheHooksOwnNamesAreHookMetrics) {
  EXPECT_TRUE(engine::is_hook_metric("hook.r0.samples_per_sec"));
  EXPECT_TRUE(engine::is_hook_metric("hook.r12.data_wait"));
  EXPECT_FALSE(engine::is_hook_metric("loss"));
  EXPECT_FALSE(engine::is_hook_metric("hooks_per_sec"));
  EXPECT_FALSE(engine::is_hook_metric("val.hook.r0"));
}

}  // namespace
}  // namespace nodus

namespace nodus::testing {
namespace {

// Ranks whose loops have no DataLoader: the lagging rank is the one with the most host time
// outside its step, said as such, not "waits for data".
TEST(SlowestRank, InALoopOfStepsTheLaggingRankIsTheOneLongestOutsideItsStep) {
  engine::RankFigures fast, slow;
  fast.samples_per_sec = slow.samples_per_sec = 50;
  fast.data_wait = 0.03;
  slow.data_wait = 0.45;
  auto s = engine::slowest_rank({{0, fast}, {1, slow}}, {}, true);
  ASSERT_TRUE(s.rank);
  EXPECT_EQ(*s.rank, 1);
  EXPECT_NE(s.text.find("rank 1 spends longest outside its step (fetching its batch, logging, "
                        "Python): 45% against 3% on rank 0, and the others wait for it at each "
                        "gradient sync"),
            std::string::npos)
      << s.text;
}

engine::RankFigures timed(double sps, double step_s, double data_wait) {
  engine::RankFigures f = figures(sps, data_wait);
  f.step_time = step_s;
  return f;
}

// Three ranks in step at 25 ms a step: ranks 0 and 2 compute 5 ms and wait 20 ms at the sync,
// rank 1 fetches its batch for 20 ms (80% of its step) and computes 5 ms.
TEST(SlowestRank, RanksInStepNameTheOneWithTheMostOwnWorkAndWhatItCostsTheOthers) {
  auto s = engine::slowest_rank(
      {{0, timed(40, 0.025, 0.0)}, {1, timed(40, 0.025, 0.8)}, {2, timed(40, 0.025, 0.0)}},
      {{1, "dev2"}});
  ASSERT_TRUE(s.rank);
  EXPECT_EQ(*s.rank, 1);
  EXPECT_NEAR(*s.own_ratio, 5.0, 1e-9);
  EXPECT_NEAR(*s.others_wait, 0.8, 1e-9);
  EXPECT_EQ(s.text,
            "rank 1 (dev2)'s own work per step (25.0 ms) is 5.0x the other ranks' median; they "
            "wait 80% of each step for it at the gradient sync. It waits on its DataLoader (data "
            "wait 80%)");
  // In a loop of steps its wait is its fetch outside the step.
  auto steps =
      engine::slowest_rank({{0, timed(40, 0.025, 0.0)}, {1, timed(40, 0.025, 0.8)}}, {}, true);
  EXPECT_NE(steps.text.find("It waits on its batch fetch outside the step (outside its step 80%)"),
            std::string::npos)
      << steps.text;
}

TEST(SlowestRank, RanksInStepWithinATenthOfEachOthersOwnWorkNameNone) {
  // Rank 1 spends 2 ms more outside its 25 ms step: the other waits 8% of it, 1.09x.
  auto s = engine::slowest_rank({{0, timed(40, 0.025, 0.10)}, {1, timed(40, 0.025, 0.18)}}, {});
  EXPECT_FALSE(s.rank) << s.text;
  EXPECT_NE(s.text.find("no rank lags by its data"), std::string::npos) << s.text;
  // 3 ms more (12% of the step): 1.14x, named.
  EXPECT_EQ(
      engine::slowest_rank({{0, timed(40, 0.025, 0.10)}, {1, timed(40, 0.025, 0.22)}}, {}).rank, 1);
}

}  // namespace
}  // namespace nodus::testing
