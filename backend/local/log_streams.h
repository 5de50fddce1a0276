#pragma once
// Which bytes of a job's log came from its stdout and which from its stderr, and when: the
// companion file "<log>.streams" beside the log. The log itself stays both streams in arrival
// order (what `nodus logs` prints by default); the index lets `logs --stream` pick one and
// `logs --since` start at a time.
//
// Records are 16 bytes: {uint64 end | stream << 63, double unix_time}: the log's bytes from the
// previous record's end up to `end` came from `stream` (0 stdout, 1 stderr), the last of them
// read at unix_time. Output of one stream within one second extends the last record in place,
// so the index grows with stream switches and seconds, not with reads; past kMaxRecords it stops
// (the rest of the log is then unattributed). Memory is constant.

#include <cstdint>
#include <string>
#include <vector>

namespace nodus::backend::local {

inline constexpr size_t kMaxStreamRecords = 1 << 20;  // 16 MiB of index at most

struct StreamSpan {
  uint64_t begin = 0, end = 0;  // byte range of the log
  int stream = 0;               // 0 stdout, 1 stderr
  double time = 0;              // unix seconds the last byte was read
};

// Appends to an index file (owns fd; -1: none). Errors are dropped, as for the log.
class StreamIndexWriter {
 public:
  explicit StreamIndexWriter(int fd = -1) : fd_(fd) {}
  ~StreamIndexWriter();
  StreamIndexWriter(const StreamIndexWriter&) = delete;
  StreamIndexWriter& operator=(const StreamIndexWriter&) = delete;
  // The log now ends at `log_end`; the bytes since the last call came from `stream` at `now`.
  void add(int stream, uint64_t log_end, double now);
  void close();

 private:
  int fd_;
  size_t records_ = 0;
  int last_stream_ = -1;
  long long last_second_ = -1;
};

inline std::string stream_index_path(const std::string& log_path) { return log_path + ".streams"; }

// The bytes of a log that --log-limit dropped: the log's offsets [begin, end) read as a hole
// (punched out, so they take no disk), or lie past the file's end where the file system cannot
// punch holes and the log stopped at its head. Kept in "<log>.gap" as two decimal numbers,
// rewritten in place before every punch, so a reader that finds its bytes inside the gap after
// reading them knows they were dropped.
struct LogGap {
  uint64_t begin = 0, end = 0;
  bool has() const { return end > begin; }
  uint64_t size() const { return has() ? end - begin : 0; }
};
inline std::string log_gap_path(const std::string& log_path) { return log_path + ".gap"; }
// {0, 0} when the log has no gap file (or it cannot be read).
LogGap read_log_gap(const std::string& log_path);
// Rewrites the gap file `fd` in place (fixed width: no truncation between writes).
void write_log_gap(int fd, const LogGap& gap);

// The spans of an index file, in log order; false when it cannot be opened (no index).
bool read_stream_index(const std::string& path, std::vector<StreamSpan>& spans);

}  // namespace nodus::backend::local
