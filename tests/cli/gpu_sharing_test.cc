// GPUs are the machine's, not a store's: two stores (two users, or two shells with different
// NODUS_HOME) on one machine never run jobs on the same GPU at once (store/gpu_locks.h). Both
// homes here share this test process's lock folder (tests/test_env.cc), as two stores on one
// machine share /run/nodus/gpus.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cli/fixtures.h"

namespace nodus::testing {
namespace {

std::map<std::string, std::string> h100s(const NodusHome& home, int count) {
  return {{"NODUS_LOCAL_GPUS", "H100:" + std::to_string(count)},
          {"NODUS_PRICES", write_test_prices(home)}};
}

// Waits until job `id` of `home` is in `state` (show's json), for up to 30 s of wall time (not a
// count of looks: under a sanitizer on a loaded machine one `nodus show` can take half a second).
bool job_reaches(const NodusHome& home, const std::string& id, const std::string& state) {
  const double until = now_seconds() + 30;
  while (now_seconds() < until) {
    auto r = home.run({"show", id, "--format", "json"});
    if (r.code == 0 && nlohmann::json::parse(r.out).value("state", "") == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A detached run that holds one H100 until `go` exists; its job id ("" when it did not start).
std::string hold_gpu(const NodusHome& home, const std::map<std::string, std::string>& env,
                     const std::string& go) {
  auto holder = home.run({"run", "-d", "--gpu", "H100", "--", "sh", "-c",
                          "while [ ! -e " + go + " ]; do sleep 0.05; done"},
                         env);
  EXPECT_EQ(holder.code, 0) << holder.err;
  return holder.code == 0 ? holder.out.substr(0, holder.out.find('\n')) : "";
}

// A run still waiting for its GPUs ends by a signal as a running job does: Ctrl-C (SIGINT)
// cancels it, exit 130; SIGTERM stops it, exit 143, attached or detached (`nodus stop`), and
// `wait` says 143 as well. Nothing of the waiting jobs ran. Before: SIGTERM to an attached run
// recorded it cancelled (130), and a detached one was stopped with no exit code.
TEST(GpuSharing, ASignalWhileWaitingForGpusEndsTheJobAsItWouldEndARunningOne) {
  NodusHome home;
  const auto env = h100s(home, 1);
  const std::string go = home.file("go"), ran = home.file("ran");
  const std::string holder_id = hold_gpu(home, env, go);
  ASSERT_FALSE(holder_id.empty());
  struct Case {
    int sig;
    int code;
    const char* state;
    const char* note;
  };
  int id = std::stoi(holder_id);
  for (Case c : {Case{SIGINT, 130, "cancelled", "not started: interrupted while waiting for GPUs"},
                 Case{SIGTERM, 143, "stopped", "not started: stopped while waiting for GPUs"}}) {
    ++id;
    const std::string out = home.file("attached" + std::to_string(id));
    pid_t p = home.start({"run", "--gpu", "H100", "--", "touch", ran}, env, out);
    ASSERT_TRUE(job_reaches(home, std::to_string(id), "waiting")) << read_file(out + ".err");
    ::kill(p, c.sig);
    EXPECT_EQ(wait_exit(p, std::chrono::seconds(30)), c.code) << read_file(out + ".err");
    EXPECT_NE(read_file(out + ".err")
                  .find("job " + std::to_string(id) + " " + c.state + " while waiting for GPUs"),
              std::string::npos)
        << read_file(out + ".err");
    auto job = show_json(home, std::to_string(id));
    EXPECT_EQ(job["state"], c.state) << job.dump();
    EXPECT_EQ(job["exit_code"], c.code) << job.dump();
    EXPECT_EQ(job["note"], c.note) << job.dump();
  }
  auto detached = home.run({"run", "-d", "--gpu", "H100", "--", "touch", ran}, env);
  ASSERT_EQ(detached.code, 0) << detached.err;
  const std::string did = detached.out.substr(0, detached.out.find('\n'));
  ASSERT_TRUE(job_reaches(home, did, "waiting"));
  auto stop = home.run({"stop", did}, env);
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_EQ(home.run({"wait", did}, env).code, 143);
  auto job = show_json(home, did);
  EXPECT_EQ(job["state"], "stopped") << job.dump();
  EXPECT_EQ(job["exit_code"], 143) << job.dump();
  EXPECT_EQ(job["note"], "not started: stopped while waiting for GPUs") << job.dump();
  EXPECT_FALSE(std::filesystem::exists(ran)) << "a job that never got its GPU ran";
  write_file(go, "");
  EXPECT_EQ(home.run({"wait", holder_id}, env).code, 0);
}

// A sweep's cell waiting for a GPU another job holds, when `nodus stop` stops the sweep: the
// cell is stopped (143), as a waiting job is, not cancelled as by Ctrl-C (130).
TEST(GpuSharing, AStoppedSweepsWaitingCellIsStoppedNotCancelled) {
  NodusHome home;
  const auto env = h100s(home, 1);
  const std::string go = home.file("go"), ran = home.file("ran");
  const std::string holder_id = hold_gpu(home, env, go);
  ASSERT_FALSE(holder_id.empty());
  auto sweep = home.run({"sweep", "-d", "--gpu", "H100", "-p", "i=1", "--", "touch", ran}, env);
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  ASSERT_TRUE(job_reaches(home, "2", "waiting"));
  EXPECT_EQ(home.run({"stop", "s1"}, env).code, 0);
  EXPECT_EQ(home.run({"wait", "s1"}, env).code, 143);
  auto cell = show_json(home, "2");
  EXPECT_EQ(cell["state"], "stopped") << cell.dump();
  EXPECT_EQ(cell["exit_code"], 143) << cell.dump();
  EXPECT_EQ(cell["note"], "not started: the sweep was stopped while it waited for GPUs")
      << cell.dump();
  EXPECT_FALSE(std::filesystem::exists(ran)) << "a cell that never got its GPU ran";
  write_file(go, "");
  EXPECT_EQ(home.run({"wait", holder_id}, env).code, 0);
}

TEST(GpuSharing, RunsOfTwoStoresNeverShareAGpu) {
  NodusHome a, b;
  const std::string log = a.file("gpus.log");
  const std::string script = "echo start $CUDA_VISIBLE_DEVICES $(date +%s.%N) >> " + log +
                             "; sleep 0.5; echo end $CUDA_VISIBLE_DEVICES $(date +%s.%N) >> " + log;
  std::vector<pid_t> runs;
  for (int i = 0; i < 4; ++i) {
    const NodusHome& home = i % 2 ? b : a;
    runs.push_back(home.start({"run", "--gpu", "H100", "--", "sh", "-c", script}, h100s(home, 1)));
  }
  for (pid_t p : runs) EXPECT_EQ(wait_exit(p, std::chrono::seconds(60)), 0);
  std::set<std::string> open;
  std::istringstream in(read_file(log));
  std::string what, gpu;
  double t;
  int lines = 0;
  while (in >> what >> gpu >> t) {
    ++lines;
    if (what == "start") {
      EXPECT_EQ(open.count(gpu), 0u) << "GPU " << gpu << " handed out twice:\n" << read_file(log);
      open.insert(gpu);
    } else {
      open.erase(gpu);
    }
  }
  EXPECT_EQ(lines, 8) << read_file(log);
}

TEST(GpuSharing, AGpuHeldByAnotherStoreIsNamedWhereItIsRefused) {
  NodusHome a, b;
  const std::string go = a.file("go");
  auto first = a.run({"run", "-d", "--gpu", "H100", "--", "sh", "-c",
                      "while [ ! -e " + go + " ]; do sleep 0.05; done"},
                     h100s(a, 1));
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string id = first.out.substr(0, first.out.find('\n'));

  auto refused = b.run({"run", "--gpu", "H100", "--no-wait", "--", "true"}, h100s(b, 1));
  EXPECT_EQ(refused.code, 125) << refused.err;
  // The last line is the error: one line that names the holder.
  std::string last = refused.err.substr(0, refused.err.size() - 1);
  last = last.substr(last.rfind('\n') + 1);
  EXPECT_NE(last.find("--no-wait"), std::string::npos) << refused.err;
  EXPECT_NE(last.find("GPU 0 is held by job " + id + " of the store " + a.file("nodus.db")),
            std::string::npos)
      << refused.err;

  auto gpus = b.run({"gpus", "--format", "json"}, h100s(b, 1));
  ASSERT_EQ(gpus.code, 0) << gpus.err;
  auto rows = nlohmann::json::parse(gpus.out);
  ASSERT_EQ(rows.size(), 1u) << gpus.out;
  EXPECT_TRUE(rows[0]["job"].is_null()) << "no job of b's store holds it";
  EXPECT_EQ(rows[0]["other_store"]["job"], std::stoll(id)) << gpus.out;
  EXPECT_EQ(rows[0]["other_store"]["store"], a.file("nodus.db")) << gpus.out;

  write_file(go, "");
  // The supervisor frees its GPUs before it records the end: once `wait` returns they are b's.
  EXPECT_EQ(a.run({"wait", id}, h100s(a, 1)).code, 0);
  auto second = b.run({"run", "--gpu", "H100", "--no-wait", "--", "true"}, h100s(b, 1));
  EXPECT_EQ(second.code, 0) << second.err;
}

TEST(GpuSharing, TheQueueIsShownAndNamedToTheNextInLine) {
  NodusHome home;
  auto env = h100s(home, 1);
  env["NODUS_GPU_QUEUE_AFTER"] = "0";  // first come, first served at once
  const std::string go = home.file("go");
  auto holder = home.run({"run", "-d", "--gpu", "H100", "--", "sh", "-c",
                          "while [ ! -e " + go + " ]; do sleep 0.05; done"},
                         env);
  ASSERT_EQ(holder.code, 0) << holder.err;
  const std::string first_out = home.file("first"), second_out = home.file("second");
  pid_t first = home.start({"run", "--gpu", "H100", "--", "true"}, env, first_out);
  ASSERT_TRUE(job_reaches(home, "2", "waiting")) << read_file(first_out + ".err");
  // In line once its first look failed: `nodus gpus` shows it, and who comes next is told.
  std::string gpus;
  for (int i = 0; i < 200 && gpus.find("waiting #1") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gpus = home.run({"gpus"}, env).err;
  }
  const std::string job2 = "1 x H100-SXM for job 2 of " + home.path() + "/nodus.db";
  EXPECT_NE(gpus.find("nodus: waiting #1: " + job2 + " (pid "), std::string::npos) << gpus;
  pid_t second = home.start({"run", "--gpu", "H100", "--", "true"}, env, second_out);
  ASSERT_TRUE(job_reaches(home, "3", "waiting")) << read_file(second_out + ".err");
  std::string said;  // the waiting line comes after the row's state, at the first failed look
  for (int i = 0; i < 400 && said.find("waiting for") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    said = read_file(second_out + ".err");
  }
  EXPECT_NE(said.find("; first in line: " + job2), std::string::npos) << said;
  write_file(go, "");
  EXPECT_EQ(wait_exit(first, std::chrono::seconds(60)), 0) << read_file(first_out + ".err");
  EXPECT_EQ(wait_exit(second, std::chrono::seconds(60)), 0) << read_file(second_out + ".err");
  auto a = show_json(home, "2"), b = show_json(home, "3");
  EXPECT_LE(a["started_at"].get<double>(), b["started_at"].get<double>()) << "served out of order";
  EXPECT_EQ(home.run({"gpus"}, env).err.find("waiting #"), std::string::npos) << "left in line";
}

// First come, first served (store/gpu_queue.h): a job that needs both GPUs, started while a
// sweep of 1-GPU cells runs, gets them when both are next free, not after the sweep's last cell.
// Before, every cell's end was taken at once by the sweep's next cell, and the wide job waited
// for the whole sweep. The wide job is a run (it waits in its supervisor) or a cell of a second
// sweep (it waits in that sweep). Each narrow cell runs until its own file exists, so which cells
// run when the wide job asks, and when they end, is the test's doing, not the machine's speed:
// the first two cells run, the wide job waits in line past the queue's grace (0.2 s here, 10 s by
// default: until then claims that fit may still pass a waiter over), then every cell may end.
// The sweep's third cell must not start before the wide job. (A cell also ends once the test's
// home is gone: a failed assertion leaves nothing running.)
void expect_wide_job_not_passed_over(const std::vector<std::string>& wide_command) {
  NodusHome home;
  auto env = h100s(home, 2);
  env["NODUS_GPU_QUEUE_AFTER"] = "0.2s";
  const std::string go = home.file("go-"), out = home.file("sweep"), wide_out = home.file("wide");
  pid_t sweep = home.start(
      {"sweep", "-p", "i=1..8", "--gpu", "H100", "--", "sh", "-c",
       "while [ ! -e " + go + "$0 ] && [ -d " + home.path() + " ]; do sleep 0.02; done", "{i}"},
      env, out);
  ASSERT_TRUE(job_reaches(home, "1", "running")) << read_file(out + ".err");
  ASSERT_TRUE(job_reaches(home, "2", "running")) << read_file(out + ".err");
  pid_t wide = home.start(wide_command, env, wide_out);
  std::string gpus;
  for (const double until = now_seconds() + 30;
       now_seconds() < until && gpus.find("waiting #1: 2 x") == std::string::npos;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gpus = home.run({"gpus"}, env).err;
  }
  ASSERT_NE(gpus.find("waiting #1: 2 x"), std::string::npos)
      << gpus << read_file(wide_out + ".err");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the grace
  for (int i = 1; i <= 8; ++i) write_file(go + std::to_string(i), "");
  EXPECT_EQ(wait_exit(wide, std::chrono::seconds(120)), 0) << read_file(wide_out + ".err");
  EXPECT_EQ(wait_exit(sweep, std::chrono::seconds(120)), 0) << read_file(out + ".err");
  auto jobs = nlohmann::json::parse(home.run({"ps", "-a", "--format", "json"}).out);
  double wide_start = -1;
  std::vector<double> cell_starts;
  for (const auto& job : jobs) {
    ASSERT_EQ(job["state"], "completed") << job.dump();
    const double started = job["started_at"].get<double>();
    if (job["gpu_count"] == 2) {
      if (wide_start < 0 || started < wide_start) wide_start = started;
    } else {
      cell_starts.push_back(started);
    }
  }
  ASSERT_EQ(cell_starts.size(), 8u) << jobs.dump(1);
  std::sort(cell_starts.begin(), cell_starts.end());
  ASSERT_GT(wide_start, 0) << jobs.dump();
  EXPECT_LT(wide_start, cell_starts[2]) << "a 1-GPU cell passed the waiting 2-GPU job over:\n"
                                        << jobs.dump(1);
}

TEST(GpuSharing, AWideRunIsNotPassedOverByASweepOfNarrowCells) {
  expect_wide_job_not_passed_over({"run", "--gpu", "H100:2", "--", "true"});
}

TEST(GpuSharing, AWideSweepCellIsNotPassedOverByASweepOfNarrowCells) {
  expect_wide_job_not_passed_over({"sweep", "-p", "j=1,2", "--gpu", "H100:2", "--", "true"});
}

}  // namespace
}  // namespace nodus::testing
