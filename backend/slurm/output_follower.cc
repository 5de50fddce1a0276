#include "backend/slurm/output_follower.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "core/files.h"

namespace nodus::backend::slurm {

OutputFollower::OutputFollower(std::string path, bool echo,
                               std::function<void(std::string_view)> on_line)
    : path_(std::move(path)), echo_(echo), on_line_(std::move(on_line)) {}

void OutputFollower::poll() { (void)read_some(kMaxReadPerPoll); }

int64_t OutputFollower::read_some(int64_t limit) {
  if ((!echo_ && !on_line_) || !refused_.empty()) return 0;
  auto opened = open_job_file(path_);
  if (!opened) {
    refused_ = opened.error().message;
    std::fprintf(stderr, "nodus: the job's output %s\n", refused_.c_str());
    return 0;
  }
  const int fd = *opened;
  if (fd < 0) return 0;  // not written yet
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    close(fd);
    return 0;
  }
  // A file replaced (another inode) or truncated: what is there now is new output.
  if ((offset_ > 0 && (st.st_dev != dev_ || st.st_ino != ino_)) || st.st_size < offset_) {
    offset_ = 0;
    lines_.clear();
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  // Up to the size seen now: a job appending while this reads is picked up at the next call.
  const int64_t size = st.st_size;
  char buffer[64 * 1024];
  for (int64_t read_now = 0; read_now < limit && offset_ < size;) {
    size_t want = static_cast<size_t>(
        std::min<int64_t>({static_cast<int64_t>(sizeof buffer), limit - read_now, size - offset_}));
    ssize_t n = pread(fd, buffer, want, offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += n;
    read_now += n;
    std::string_view chunk(buffer, static_cast<size_t>(n));
    if (echo_) {
      std::fwrite(chunk.data(), 1, chunk.size(), stdout);
      std::fflush(stdout);
    }
    // A line without a newline is passed on in pieces of kMaxLine, as local jobs' lines are:
    // memory stays bounded whatever the job writes.
    if (on_line_) lines_.feed(chunk, on_line_);
  }
  close(fd);
  return std::max<int64_t>(0, size - offset_);
}

void OutputFollower::finish() {
  int64_t left = read_some(kMaxReadAtFinish);
  if (left > 0)
    std::fprintf(stderr, "nodus: %lld more bytes of output not shown: they are in %s\n",
                 static_cast<long long>(left), path_.c_str());
  lines_.finish(on_line_);
}

}  // namespace nodus::backend::slurm
