#include "backend/local/output.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>

#include "core/parse.h"

namespace nodus::backend::local {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr uint64_t kAlign = 64 * 1024;  // what the log's gap is aligned to

// Writes everything, retrying short writes; errors are dropped: a full disk or a closed
// terminal must not stop the job or its supervisor. Returns the bytes written.
size_t write_all(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data += n;
    size -= static_cast<size_t>(n);
    done += static_cast<size_t>(n);
  }
  return done;
}

double unix_time() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

}  // namespace

OutputPump::OutputPump(int stdout_fd, int stderr_fd, int log_fd, bool attach, LineFn on_line,
                       int index_fd, uint64_t log_limit, int gap_fd)
    : fds_{stdout_fd, stderr_fd},
      log_fd_(log_fd),
      log_limit_(log_limit),
      gap_fd_(gap_fd),
      index_(index_fd),
      attach_(attach),
      on_line_(std::move(on_line)) {
  for (int fd : fds_)
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

OutputPump::~OutputPump() {
  close_pipe(kStdout);
  close_pipe(kStderr);
  if (log_fd_ >= 0) ::close(log_fd_);
  if (gap_fd_ >= 0) ::close(gap_fd_);
}

// The log's middle goes once it holds more than the limit plus a step: the gap starts at half
// the limit (rounded up to kAlign, so punched blocks are whole) and grows in steps of at least
// kAlign, keeping at least the limit's other half after it. Disk use stays under limit + step.
void OutputPump::write_log(const char* data, size_t size) {
  if (head_only_) {
    log_bytes_ += size;
    gap_.end = log_bytes_;
    write_log_gap(gap_fd_, gap_);  // one pwrite per read of up to 64 KiB
    return;
  }
  log_bytes_ += write_all(log_fd_, data, size);
  if (log_limit_ > 0) drop_middle();
}

void OutputPump::drop_middle() {
  const uint64_t begin = (log_limit_ / 2 + kAlign - 1) / kAlign * kAlign;
  const uint64_t keep = log_limit_ - std::min(log_limit_, begin);
  const uint64_t step = std::max<uint64_t>(kAlign, log_limit_ / 16 / kAlign * kAlign);
  if (log_bytes_ < begin + keep + step) return;
  const uint64_t from = gap_.has() ? gap_.end : begin;
  const uint64_t to = (log_bytes_ - keep) / kAlign * kAlign;
  if (to < from + step) return;
  const bool first = !gap_.has();
  // Announced before the punch: a reader that read zeros there finds them in the gap.
  gap_ = {begin, to};
  write_log_gap(gap_fd_, gap_);
  if (::fallocate(log_fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                  static_cast<off_t>(to - from)) != 0) {
    // No holes here (or the punch failed): the log ends at its head and the rest is dropped.
    head_only_ = true;
    if (::ftruncate(log_fd_, static_cast<off_t>(begin)) != 0) {
      // The log then keeps what it had; the gap still says what readers skip.
    }
    gap_ = {begin, log_bytes_};
    write_log_gap(gap_fd_, gap_);
  }
  if (first && attach_) {
    const std::string kept =
        head_only_
            ? "only its first " + format_size(begin) + " (this file system cannot punch holes)"
            : "its first " + format_size(begin) + " and its last " + format_size(keep);
    std::fprintf(stderr,
                 "nodus: the job's output passed --log-limit %s: its log keeps %s; nodus logs "
                 "marks what was dropped\n",
                 format_size(log_limit_).c_str(), kept.c_str());
  }
}

void OutputPump::close_pipe(Stream s) {
  if (fds_[s] >= 0) ::close(fds_[s]);
  fds_[s] = -1;
}

long OutputPump::read_once(Stream s) {
  if (fds_[s] < 0) return 0;
  char buf[kChunk];
  ssize_t n;
  do {
    n = ::read(fds_[s], buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
  if (n <= 0) {
    close_pipe(s);
    return 0;
  }
  if (log_fd_ >= 0) {
    write_log(buf, static_cast<size_t>(n));
    index_.add(s, log_bytes_, unix_time());  // one pwrite, in place within a second
  }
  // A reader that left (`nodus run | head`): the rest of this stream goes to the log only.
  if (attach_ && echo_[s] &&
      write_all(s == kStdout ? STDOUT_FILENO : STDERR_FILENO, buf, static_cast<size_t>(n)) <
          static_cast<size_t>(n) &&
      errno == EPIPE)
    echo_[s] = false;
  lines_[s].feed(std::string_view(buf, static_cast<size_t>(n)), on_line_);
  return n;
}

void OutputPump::read_available(Stream s) {
  for (int i = 0; i < 4; ++i)
    if (read_once(s) <= 0) return;
}

void OutputPump::drain_and_close(std::chrono::steady_clock::time_point until, size_t max_bytes) {
  size_t total = 0;
  for (Stream s : {kStdout, kStderr}) {
    while (fds_[s] >= 0 && total < max_bytes && std::chrono::steady_clock::now() < until) {
      long n = read_once(s);
      if (n <= 0) break;
      total += static_cast<size_t>(n);
    }
    lines_[s].finish(on_line_);
    close_pipe(s);
  }
  // Nothing more will be written: a supervisor of many jobs must not keep every log open.
  if (log_fd_ >= 0) ::close(log_fd_);
  log_fd_ = -1;
  if (head_only_) write_log_gap(gap_fd_, gap_);
  if (gap_fd_ >= 0) ::close(gap_fd_);
  gap_fd_ = -1;
  index_.close();
}

}  // namespace nodus::backend::local
