#pragma once
// Shared by the local backend's tests: a temp folder per test, running a job to its end, and
// watching pids recorded by test scripts.

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "core/proc.h"

namespace nodus::backend::local::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nodus-local-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& text, bool executable = false) {
  std::ofstream(path) << text;
  if (executable) std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

// A job record for argv run through sh -c script.
inline JobRecord shell_job(const std::string& script) {
  JobRecord job;
  job.argv = {"/bin/sh", "-c", script};
  return job;
}

// Waits for the job's end (bounded); fails the test if it does not come.
inline Event wait_exit(Backend& backend, JobRecord& job, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto e = backend.wait(job, deadline, -1);
    if (!e.ok()) throw std::runtime_error(e.error().message);
    if (e->kind == Event::Kind::kExited) return *e;
    if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error("job did not end");
  }
}

// Polls until pred() holds or limit passes (for things the tests cannot wait on otherwise).
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// One pid per line, as `echo $$ >> file` leaves them.
inline std::vector<pid_t> read_pids(const std::string& path) {
  std::vector<pid_t> pids;
  std::ifstream in(path);
  long p;
  while (in >> p) pids.push_back(static_cast<pid_t>(p));
  return pids;
}

// Gone: no such process, or a zombie. Reaps it when it is our zombie child.
inline bool gone(pid_t pid) {
  if (!process_gone(pid)) return false;
  ::waitpid(pid, nullptr, WNOHANG);
  return true;
}

}  // namespace nodus::backend::local::testing
