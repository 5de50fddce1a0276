#include "backend/local/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace nodus::backend::local {
namespace {

constexpr size_t kChunk = 64 * 1024;

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

void LineSplitter::feed(std::string_view data, const LineFn& on_line) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    size_t room = max_line_ - partial_.size();
    if (nl != std::string_view::npos && nl <= room) {
      partial_.append(data.substr(0, nl));
      if (on_line) on_line(partial_);
      partial_.clear();
      data.remove_prefix(nl + 1);
      continue;
    }
    size_t take = std::min(room, data.size());
    partial_.append(data.substr(0, take));
    data.remove_prefix(take);
    if (partial_.size() >= max_line_) {
      if (on_line) on_line(partial_);
      partial_.clear();
    }
  }
}

void LineSplitter::finish(const LineFn& on_line) {
  if (!partial_.empty() && on_line) on_line(partial_);
  partial_.clear();
}

OutputPump::OutputPump(int stdout_fd, int stderr_fd, int log_fd, bool attach, LineFn on_line,
                       int index_fd)
    : fds_{stdout_fd, stderr_fd},
      log_fd_(log_fd),
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
    log_bytes_ += write_all(log_fd_, buf, static_cast<size_t>(n));
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
  index_.close();
}

}  // namespace nodus::backend::local
