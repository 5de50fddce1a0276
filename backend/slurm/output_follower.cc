#include "backend/slurm/output_follower.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace nodus::backend::slurm {

OutputFollower::OutputFollower(std::string path, bool echo,
                               std::function<void(std::string_view)> on_line)
    : path_(std::move(path)), echo_(echo), on_line_(std::move(on_line)) {}

void OutputFollower::poll() { read_some(kMaxReadPerPoll); }

void OutputFollower::read_some(int64_t limit) {
  if (!echo_ && !on_line_) return;
  int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buffer[64 * 1024];
  for (int64_t read_now = 0; read_now < limit;) {
    ssize_t n = pread(fd, buffer, sizeof buffer, offset_);
    if (n <= 0) break;
    offset_ += n;
    read_now += n;
    std::string_view chunk(buffer, static_cast<size_t>(n));
    if (echo_) {
      std::fwrite(chunk.data(), 1, chunk.size(), stdout);
      std::fflush(stdout);
    }
    if (!on_line_) continue;
    partial_.append(chunk);
    size_t start = 0;
    for (size_t nl = partial_.find('\n'); nl != std::string::npos;
         nl = partial_.find('\n', start)) {
      on_line_(std::string_view(partial_).substr(start, nl - start));
      start = nl + 1;
    }
    partial_.erase(0, start);
    // A line without a newline is passed on in pieces of kMaxLine, as local jobs' lines are:
    // memory stays bounded whatever the job writes.
    while (partial_.size() >= kMaxLine) {
      on_line_(std::string_view(partial_).substr(0, kMaxLine));
      partial_.erase(0, kMaxLine);
    }
  }
  close(fd);
}

void OutputFollower::finish() {
  read_some(INT64_MAX);
  if (on_line_ && !partial_.empty()) on_line_(partial_);
  partial_.clear();
}

}  // namespace nodus::backend::slurm
