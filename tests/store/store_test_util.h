#pragma once
// Helpers for the store tests: a temp folder per test, a job with every field set, and child
// processes that run a function and report failure through their exit status.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/job.h"
#include "store/store.h"

namespace nodus::store::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/nodus-store-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    // Tests may have made folders unwritable; give them back before removing.
    for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string db() const { return path_ + "/nodus.db"; }

 private:
  std::string path_;
};

// A job with every field away from its default, so a round trip proves each column.
inline JobRecord full_job(const std::string& name = "train") {
  JobRecord j;
  j.name = name;
  j.backend = "local";
  j.backend_id = "4242";
  j.argv = {"python", "train.py", "--lr", "3e-4", "with space", "ünï"};
  j.env = {{"BATCH", "256"}, {"EMPTY", ""}};
  j.workdir = "/home/u/proj";
  j.image = "nodus/pytorch";
  j.gpu_type = "H100-SXM";
  j.gpu_count = 2;
  j.gpu_indices = {0, 3};
  j.inventory_source = "NODUS_LOCAL_GPUS";
  j.rate_per_gpu_hour = 2.6;
  j.max_cost = 5.25;
  j.timeout_ms = 7'200'000;
  j.grace_ms = 15'000;
  j.options = {{"min_util", 40}, {"attach", true}};
  j.state = JobState::kRunning;
  j.exit_code = 3;
  j.signal = 9;
  j.created_at = 1'700'000'000.25;
  j.started_at = 1'700'000'001.5;
  j.ended_at = 1'700'000'061.75;
  j.cost = 0.0866;
  j.supervisor_pid = 1234;
  j.supervisor_start = 987654;
  j.log_path = "/x/logs/1.log";
  j.metrics_path = "/x/metrics/1.jsonl";
  j.note = "left 1 process on GPU 3";
  j.cell_index = 4;
  j.cell_key = "num_workers=8";
  j.params = {{"num_workers", "8"}};
  return j;
}

// A minimal job row for tests that only need an id to hang things on.
inline JobRecord plain_job(JobState state = JobState::kCompleted) {
  JobRecord j;
  j.name = "j";
  j.argv = {"true"};
  j.state = state;
  j.created_at = unix_now();
  return j;
}

// Listing filters (designated initializers would leave fields out and warn under -Wextra).
inline JobFilter every_job(std::optional<int64_t> sweep_id = std::nullopt) {
  JobFilter f;
  f.all = true;
  f.sweep_id = sweep_id;
  return f;
}
inline JobFilter recent_jobs(int limit, std::optional<int64_t> sweep_id = std::nullopt) {
  JobFilter f;
  f.limit = limit;
  f.sweep_id = sweep_id;
  return f;
}

// Forks a child that runs fn and exits 0 if it returned true, 1 if false, 2 on an exception
// (printed to stderr). The child never returns into the test.
inline pid_t spawn(const std::function<bool()>& fn) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  int code = 2;
  try {
    code = fn() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", ::getpid(), e.what());
  }
  std::fflush(nullptr);
  ::_exit(code);
}

// Waits for the child; returns its exit status, or 128 + signal.
inline int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace nodus::store::testing
