#pragma once
// A job's output, as it arrives on its stdout and stderr pipes: appended to the job's log
// (both streams interleaved in arrival order), copied to nodus's own stdout/stderr when the run
// is attached, and split into lines for --metric-regex.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "backend/local/log_streams.h"
#include "core/line_splitter.h"

namespace nodus::backend::local {

using nodus::LineFn;
using nodus::LineSplitter;

class OutputPump {
 public:
  enum Stream { kStdout = 0, kStderr = 1 };

  // Takes ownership of the pipes' read ends (made non-blocking here), of log_fd (-1: no log,
  // else opened O_APPEND), of index_fd, the log's stream index (log_streams.h; -1: none) and of
  // gap_fd, its gap file. log_limit > 0 bounds the log's disk use (--log-limit): past it the log
  // keeps its first half and its last half, and the bytes between become the log's gap.
  OutputPump(int stdout_fd, int stderr_fd, int log_fd, bool attach, LineFn on_line,
             int index_fd = -1, uint64_t log_limit = 0, int gap_fd = -1);
  ~OutputPump();
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  // The pipe's descriptor to poll, -1 once it reached end of file or was closed.
  int fd(Stream s) const { return fds_[s]; }

  // Reads what the pipe holds now, without blocking (at most ~256 KiB per call, so the caller
  // gets back to its deadline). Closes the pipe at end of file.
  void read_available(Stream s);

  // After the main process exited: reads what is left in both pipes without waiting for more
  // (descendants may hold them open), at most max_bytes or until `until`; then delivers
  // partial lines and closes the pipes and the log.
  void drain_and_close(std::chrono::steady_clock::time_point until, size_t max_bytes);

 private:
  // Returns bytes read, 0 at end of file (pipe closed), -1 when nothing is available now.
  long read_once(Stream s);
  void close_pipe(Stream s);
  void write_log(const char* data, size_t size);
  void drop_middle();

  int fds_[2];
  int log_fd_;
  uint64_t log_bytes_ = 0;  // the log's length as the job wrote it: where the next bytes land
  uint64_t log_limit_;      // 0: none
  int gap_fd_;
  LogGap gap_;              // what the limit dropped so far
  bool head_only_ = false;  // the file system cannot punch holes: past the head, nothing is kept
  StreamIndexWriter index_;
  bool attach_;
  bool echo_[2] = {true, true};  // false once that stream's reader is gone (EPIPE)
  LineFn on_line_;
  LineSplitter lines_[2];
};

}  // namespace nodus::backend::local
