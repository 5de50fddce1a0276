#pragma once
// OutputFollower reads a Slurm job's output file as it grows (the file is on this host when the
// cluster is this machine or shares the folder) and hands it on: to nodus's stdout when the run
// is attached, line by line to on_line. A file that does not exist yet is simply not read.
//
// The file is the job's: it can replace it with a FIFO (whose open would wait for a writer) or a
// symlink to /dev/zero (an endless read). So it is opened with core/files.h's open_job_file
// (O_NONBLOCK | O_NOFOLLOW, regular files only: anything else is refused once, with one line on
// stderr, and never read again), only up to the size it had when opened, and with a budget per
// call: nothing here waits on the job or reads without end.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/line_splitter.h"

namespace nodus::backend::slurm {

class OutputFollower {
 public:
  OutputFollower(std::string path, bool echo, std::function<void(std::string_view)> on_line);
  static constexpr size_t kMaxLine = 64 * 1024;  // longer lines reach on_line in pieces
  // Reads at most this much per poll(), so that a job writing fast cannot hold up its caller's
  // loop (deadlines, signals); the rest comes at the next poll.
  static constexpr int64_t kMaxReadPerPoll = 16 << 20;
  // finish() reads at most this much more; what is left is said in one line (the file keeps it).
  static constexpr int64_t kMaxReadAtFinish = 256 << 20;

  // Reads what was appended since the last call, up to kMaxReadPerPoll.
  void poll();
  // Reads the rest (up to kMaxReadAtFinish) and passes on a last line that has no newline.
  void finish();
  // Why the file is not followed (it is not a regular file), else "".
  const std::string& refused() const { return refused_; }

 private:
  // Reads up to `limit` bytes; returns how many were left unread.
  int64_t read_some(int64_t limit);

  std::string path_;
  bool echo_;
  std::function<void(std::string_view)> on_line_;
  int64_t offset_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  LineSplitter lines_{kMaxLine};
  std::string refused_;
};

}  // namespace nodus::backend::slurm
