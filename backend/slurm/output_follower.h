#pragma once
// OutputFollower reads a Slurm job's output file as it grows (the file is on this host when the
// cluster is this machine or shares the folder) and hands it on: to nodus's stdout when the run
// is attached, line by line to on_line. A file that does not exist yet is simply not read.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace nodus::backend::slurm {

class OutputFollower {
 public:
  OutputFollower(std::string path, bool echo, std::function<void(std::string_view)> on_line);
  static constexpr size_t kMaxLine = 64 * 1024;  // longer lines reach on_line in pieces
  // Reads at most this much per poll(), so that a job writing fast cannot hold up its caller's
  // loop (deadlines, signals); the rest comes at the next poll.
  static constexpr int64_t kMaxReadPerPoll = 16 << 20;

  // Reads what was appended since the last call, up to kMaxReadPerPoll.
  void poll();
  // Reads the rest and passes on a last line that has no newline.
  void finish();

 private:
  void read_some(int64_t limit);

  std::string path_;
  bool echo_;
  std::function<void(std::string_view)> on_line_;
  int64_t offset_ = 0;
  std::string partial_;
};

}  // namespace nodus::backend::slurm
