#pragma once
// Runs the real nodus binary for integration tests: each test gets its own NODUS_HOME, and every
// run returns its exit code, stdout, stderr and wall time.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace nodus::testing {

struct RunResult {
  int code = -1;  // exit code, or 128 + signal
  std::string out;
  std::string err;
  double seconds = 0;
};

class NodusHome {
 public:
  NodusHome();
  ~NodusHome();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  // Environment for nodus: NODUS_HOME plus `extra` on top of this process's environment.
  std::map<std::string, std::string> env(
      const std::map<std::string, std::string>& extra = {}) const;

  // Runs nodus with args to completion.
  RunResult run(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& extra = {}) const;
  // Starts nodus without waiting; stdout/stderr go to files under path().
  pid_t start(const std::vector<std::string>& args,
              const std::map<std::string, std::string>& extra = {},
              const std::string& out_file = "") const;

 private:
  std::string path_;
};

// Waits for pid to exit (up to timeout); returns its exit code or 128 + signal, -1 on timeout.
int wait_exit(pid_t pid, std::chrono::milliseconds timeout);
bool pid_alive(pid_t pid);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);
double now_seconds();  // steady clock

}  // namespace nodus::testing
