#pragma once
// LineSplitter splits a byte stream into lines, the one way every reader of a job's output or a
// tool's stream in nodus does (the local backend's output pump, the Slurm output follower, the
// nvidia-smi sampler). A partial last line is kept until its newline arrives or finish() is
// called. A line longer than max_line bytes is delivered in pieces of max_line bytes, so a
// stream without newlines cannot grow nodus's memory.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace nodus {

using LineFn = std::function<void(std::string_view line)>;  // the line, without its newline

class LineSplitter {
 public:
  static constexpr size_t kDefaultMaxLine = 64 * 1024;
  explicit LineSplitter(size_t max_line = kDefaultMaxLine) : max_line_(max_line) {}
  void feed(std::string_view data, const LineFn& on_line);
  void finish(const LineFn& on_line);  // delivers the partial line, if any
  void clear() { partial_.clear(); }   // drops the partial line (the stream started over)

 private:
  std::string partial_;
  size_t max_line_;
};

}  // namespace nodus
