#include "backend/local/log_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/files.h"

namespace nodus::backend::local {
namespace {

constexpr uint64_t kStderrBit = uint64_t{1} << 63;

struct Record {
  uint64_t end_and_stream;
  double time;
};
static_assert(sizeof(Record) == 16);

}  // namespace

StreamIndexWriter::~StreamIndexWriter() { close(); }

void StreamIndexWriter::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StreamIndexWriter::add(int stream, uint64_t log_end, double now) {
  if (fd_ < 0) return;
  Record r{log_end | (stream ? kStderrBit : 0), now};
  long long second = static_cast<long long>(std::floor(now));
  bool extend = records_ > 0 && stream == last_stream_ && second == last_second_;
  if (!extend && records_ >= kMaxStreamRecords) return;
  off_t at = static_cast<off_t>((extend ? records_ - 1 : records_) * sizeof(Record));
  ssize_t n;
  do {
    n = ::pwrite(fd_, &r, sizeof r, at);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof r)) return;  // a full disk: the index just stops growing
  if (!extend) ++records_;
  last_stream_ = stream;
  last_second_ = second;
}

bool read_stream_index(const std::string& path, std::vector<StreamSpan>& spans) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  spans.clear();
  Record buf[4096];
  uint64_t begin = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    // A record being written may be read half: only whole ones count.
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(Record); ++i) {
      uint64_t end = buf[i].end_and_stream & ~kStderrBit;
      if (end < begin || spans.size() >= kMaxStreamRecords) break;  // not an index nodus wrote
      spans.push_back({begin, end, (buf[i].end_and_stream & kStderrBit) ? 1 : 0, buf[i].time});
      begin = end;
    }
    if (static_cast<size_t>(n) % sizeof(Record) != 0) break;
  }
  ::close(fd);
  return true;
}

}  // namespace nodus::backend::local

namespace nodus::backend::local {

LogGap read_log_gap(const std::string& log_path) {
  LogGap gap;
  auto fd = open_job_file(log_gap_path(log_path));
  if (!fd.ok() || *fd < 0) return gap;
  char buf[64] = {};
  ssize_t n = ::pread(*fd, buf, sizeof buf - 1, 0);
  ::close(*fd);
  unsigned long long begin = 0, end = 0;
  if (n > 0 && std::sscanf(buf, "%llu %llu", &begin, &end) == 2 && end > begin) {
    gap.begin = begin;
    gap.end = end;
  }
  return gap;
}

void write_log_gap(int fd, const LogGap& gap) {
  if (fd < 0) return;
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%020llu %020llu\n",
                        static_cast<unsigned long long>(gap.begin),
                        static_cast<unsigned long long>(gap.end));
  if (::pwrite(fd, buf, static_cast<size_t>(n), 0) < 0) {
    // Dropped like the log's own write errors: the job goes on.
  }
}

}  // namespace nodus::backend::local
