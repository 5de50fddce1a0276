#pragma once
// SignalWatch turns SIGINT, SIGTERM and SIGHUP into readable events on a file descriptor
// (signalfd), so the supervisor's one wait covers the job, its deadline and the user.
// Create it on the main thread before any other thread starts: the signals are blocked for
// the whole process, and children get them unblocked again before exec.
// It also ignores, for the rest of the process, the signals whose default would kill nodus
// mid-job without a record: SIGPIPE (`nodus run | head`: the write fails with EPIPE instead),
// and SIGUSR1, SIGUSR2, SIGALRM and SIGQUIT, which a job may send its parent. The job's own
// dispositions are reset to the defaults before exec (backend/local/launch.cc).

#include <optional>

namespace nodus::engine {

class SignalWatch {
 public:
  SignalWatch();
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  int fd() const { return fd_; }
  // The next pending signal, or nullopt if none is pending (never blocks).
  std::optional<int> take();

 private:
  int fd_ = -1;
};

}  // namespace nodus::engine
