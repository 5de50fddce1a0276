#pragma once
// Runs a short helper command (nvidia-smi, `docker info`) and captures what it prints. The
// helper starts like a job (launch.h: own session, dies with nodus), is registered as one of
// nodus's helper children while it runs (so no job's tree kill takes it for an orphan) and is
// killed, with its process group, when it overruns its timeout.

#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"

namespace nodus::backend::local {

struct Captured {
  int exit_code = -1;  // 128 + signal when a signal ended it
  std::string out;     // at most kMaxCapture bytes of each stream
  std::string err;
  bool timed_out = false;
};

inline constexpr size_t kMaxCapture = 1 << 20;

// argv[0] is resolved on env's PATH. Errors: not found (127), cannot run (126), 125.
Result<Captured> run_capture(const std::vector<std::string>& argv, std::vector<std::string> env,
                             std::chrono::milliseconds timeout);

// The first non-empty line of text, trimmed and cut to max_len characters.
std::string first_line(const std::string& text, size_t max_len = 200);

}  // namespace nodus::backend::local
