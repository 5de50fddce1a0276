// nodus logs JOB [-f] [--tail N]: the job's output, as it was printed (stdout and stderr
// interleaved).

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "backend/local/log_streams.h"
#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/files.h"
#include "core/parse.h"
#include "core/text.h"
#include "engine/supervisor.h"
#include "engine/sweep_session.h"
#include "store/store.h"
#include "sweep/grid.h"

namespace nodus::cli {

// Every job command resolves the same way: "42" is job 42, "s3" is sweep 3 (never a job, since
// names of those forms are refused), anything else a job name.
JobRecord find_job_or_throw(store::Store& store, const std::string& id) {
  // "s3:2": the newest run of cell 2 of sweep 3.
  auto colon = id.find(':');
  if (colon != std::string::npos && id.size() > 1 && id[0] == 's') {
    auto sweep = store.find_sweep(id.substr(0, colon));
    std::string cell = id.substr(colon + 1);
    if (sweep && !cell.empty() && cell.find_first_not_of("0123456789") == std::string::npos &&
        cell.size() < 9) {
      int want = std::stoi(cell) - 1;
      // With --repeat, run r of a cell is stored at cell + r x (cells in the grid).
      auto grid = sweep::parse_grid(sweep->definition->value("params", std::vector<std::string>{}));
      const uint64_t total = grid ? sweep::cell_count(*grid) : 0;
      std::optional<JobRecord> newest;
      for (auto& job : store.sweep_cells(sweep->id)) {
        if (job.cell_index < 0 || total == 0 ||
            static_cast<uint64_t>(job.cell_index) % total != static_cast<uint64_t>(want))
          continue;
        if (!newest || job.id > newest->id) newest = job;
      }
      if (newest) return *newest;
      throw Fatal("sweep " + id.substr(0, colon) + " has no run of cell " + cell +
                  " yet: see nodus show " + id.substr(0, colon));
    }
  }
  if (id.size() > 1 && id[0] == 's' && id.find_first_not_of("0123456789", 1) == std::string::npos)
    throw Fatal("'" + id + "' is a sweep id; this command takes a job id or name (the sweep's " +
                "jobs: nodus show " + id + ")");
  auto job = store.find_job(id);
  if (!job)
    throw Fatal("unknown job '" + escape_control(id) + "': see nodus ps -a for job ids and names");
  return *job;
}

namespace {

using backend::local::LogGap;

// A log read front to back, around what --log-limit dropped (its gap, log_streams.h): the gap
// is read again after every read, so bytes punched out while they were read are never printed.
class LogReader {
 public:
  LogReader(int fd, std::string log_path) : fd_(fd), path_(std::move(log_path)) {
    gap_ = backend::local::read_log_gap(path_);
  }
  const LogGap& gap() const { return gap_; }

  // Up to `cap` bytes at *pos and before `end` (skipping the gap, *pos moves past it), 0 at the
  // end for now or once *pos has reached `end` (a range that lies in the gap ends there: the
  // bytes after the gap belong to later ranges).
  ssize_t read(uint64_t& pos, char* buf, size_t cap, uint64_t end = UINT64_MAX) {
    for (;;) {
      if (gap_.has() && pos >= gap_.begin && pos < gap_.end) {
        announce();
        pos = gap_.end;
      }
      if (pos >= end) return 0;
      size_t want = std::min<uint64_t>(cap, end - pos);
      if (gap_.has() && pos < gap_.begin) want = std::min<uint64_t>(want, gap_.begin - pos);
      ssize_t n = pread(fd_, buf, want, static_cast<off_t>(pos));
      if (n <= 0) return n;
      if (LogGap now = backend::local::read_log_gap(path_); now.has()) gap_ = now;
      const uint64_t read_end = pos + static_cast<uint64_t>(n);
      if (gap_.has() && pos < gap_.end && read_end > gap_.begin) {
        if (pos >= gap_.begin) continue;  // dropped while it was read
        n = static_cast<ssize_t>(gap_.begin - pos);
      }
      pos += static_cast<uint64_t>(n);
      return n;
    }
  }
  // Reads and prints log[pos, end) (end: the file's end) around the gap.
  void print_to(uint64_t& pos, uint64_t end = UINT64_MAX) {
    char buf[65536];
    while (pos < end) {
      ssize_t n = read(pos, buf, sizeof buf, end);
      if (n <= 0) return;
      print(std::string(buf, static_cast<size_t>(n)));
    }
  }

 private:
  // Where the dropped bytes were, in the output's order; on stderr, so stdout stays the job's.
  void announce() {
    if (told_ == gap_.end) return;
    std::fflush(stdout);
    std::fprintf(stderr, "nodus: [%s of output dropped here by --log-limit]\n",
                 format_size(gap_.end - std::max(gap_.begin, told_)).c_str());
    told_ = gap_.end;
  }
  int fd_;
  std::string path_;
  LogGap gap_;
  uint64_t told_ = 0;
};

// Offset in the log from which its last `lines` lines start: reads backwards in blocks, so a
// multi-gigabyte log costs only what is printed; the gap (what --log-limit dropped) is skipped.
// A last line without a newline counts.
off_t tail_offset(int fd, long lines, const LogGap& gap) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size == 0) return 0;
  off_t end = st.st_size;
  if (gap.has() && static_cast<uint64_t>(end) <= gap.end)
    end = static_cast<off_t>(std::min<uint64_t>(gap.begin, static_cast<uint64_t>(end)));
  if (end == 0) return 0;
  char last = 0;
  if (pread(fd, &last, 1, end - 1) == 1 && last == '\n') --end;  // the final newline ends a line
  long seen = 0;
  char buf[65536];
  for (off_t pos = end; pos > 0;) {
    if (gap.has() && static_cast<uint64_t>(pos) > gap.begin &&
        static_cast<uint64_t>(pos) <= gap.end)
      pos = static_cast<off_t>(gap.begin);
    if (pos == 0) break;
    off_t floor =
        gap.has() && static_cast<uint64_t>(pos) > gap.end ? static_cast<off_t>(gap.end) : 0;
    off_t start =
        pos - floor > static_cast<off_t>(sizeof buf) ? pos - static_cast<off_t>(sizeof buf) : floor;
    ssize_t n = pread(fd, buf, static_cast<size_t>(pos - start), start);
    if (n <= 0) return 0;
    for (ssize_t i = n - 1; i >= 0; --i)
      if (buf[i] == '\n' && ++seen == lines) return start + i + 1;
    pos = start;
  }
  return 0;
}

// Opens a job's log for reading. The file is the job's (on Slurm it is in the folder the job
// writes), so a FIFO or a symlink in its place is refused in one line, never waited on or
// followed (core/files.h's open_job_file). -1 with errno ENOENT when there is no log yet.
int open_log(const std::string& whose, const std::string& path) {
  auto fd = open_job_file(path);
  if (!fd) throw Fatal(whose + ": its log " + fd.error().message);
  if (*fd < 0) errno = ENOENT;
  return *fd;
}

using backend::local::StreamSpan;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

// Log offset from which the last `lines` lines of the bytes in `ranges` start (as tail_offset,
// over the selected ranges only).
uint64_t tail_start(int fd, const Ranges& ranges, long lines) {
  if (ranges.empty()) return 0;
  if (lines == 0) return ranges.back().second;
  long seen = 0;
  bool last_byte = true;
  char buf[65536];
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
    for (uint64_t pos = it->second; pos > it->first;) {
      uint64_t start = pos - std::min<uint64_t>(pos - it->first, sizeof buf);
      ssize_t n = pread(fd, buf, pos - start, static_cast<off_t>(start));
      if (n <= 0) return it->first;
      for (ssize_t i = n - 1; i >= 0; --i) {
        bool newline = buf[i] == '\n' && !last_byte;  // a final newline ends the last line
        last_byte = false;
        if (newline && ++seen == lines) return start + static_cast<uint64_t>(i) + 1;
      }
      pos = start;
    }
  }
  return 0;
}

struct LogsCommand {
  std::string id;
  bool follow = false;
  long tail = -1;
  std::string stream = "all";
  std::string since;

  // --stream or --since: the log read through its stream index (backend/local/log_streams.h).
  int by_index(store::Store& store, JobRecord job) const {
    const std::string index = backend::local::stream_index_path(job.log_path);
    std::vector<StreamSpan> spans;
    if (!backend::local::read_stream_index(index, spans))
      throw Fatal("job " + std::to_string(job.id) + ": --stream and --since need the log's " +
                  "stream index, and it has none (" +
                  (job.backend != "local" ? "jobs on " + job.backend + " have one log"
                                          : "it ran before nodus kept one") +
                  "); nodus logs " + std::to_string(job.id) + " prints the whole log");
    int fd = open_log("job " + std::to_string(job.id), job.log_path);
    if (fd < 0)
      throw Fatal("cannot read the log of job " + std::to_string(job.id) + ": " + job.log_path +
                  ": " + std::strerror(errno));
    const int want = stream == "stdout" ? 0 : stream == "stderr" ? 1 : -1;
    std::optional<double> cutoff;
    if (!since.empty())
      cutoff = unix_now() - value_or_throw(parse_duration(since, "--since")).count() / 1000.0;
    auto selected = [&](const StreamSpan& s) {
      return (want < 0 || s.stream == want) && (!cutoff || s.time >= *cutoff);
    };
    LogReader reader(fd, job.log_path);
    uint64_t pos = 0;  // the log is printed or skipped up to here
    if (tail >= 0) {
      Ranges ranges;
      const LogGap& gap = reader.gap();
      for (const auto& s : spans) {
        if (!selected(s) || s.end <= s.begin) continue;
        if (!gap.has() || s.end <= gap.begin || s.begin >= gap.end) {
          ranges.emplace_back(s.begin, s.end);
          continue;
        }
        if (s.begin < gap.begin) ranges.emplace_back(s.begin, gap.begin);
        if (s.end > gap.end) ranges.emplace_back(gap.end, s.end);
      }
      pos = tail_start(fd, ranges, tail);
    }
    for (bool last = !follow;;) {
      for (const auto& s : spans) {
        if (s.end <= pos) continue;
        if (selected(s)) {
          uint64_t from = std::max(s.begin, pos);
          reader.print_to(from, s.end);
        }
        pos = s.end;
      }
      if (last) break;
      std::fflush(stdout);
      poll(nullptr, 0, 200);
      auto now = store.job(job.id);
      if (!now || is_final(now->state)) {
        if (now) job = *now;
        last = true;  // one more pass: output indexed just before the job ended
      }
      backend::local::read_stream_index(index, spans);
    }
    close(fd);
    if (follow) {
      std::fflush(stdout);
      return exit_status_for(job);
    }
    return 0;
  }

  int operator()() const {
    auto store = open_store_to_read();
    if (id.size() > 1 && id[0] == 's' && id.find_first_not_of("0123456789", 1) == std::string::npos)
      return sweep_log(*store);
    JobRecord job = find_job_or_throw(*store, id);
    if (stream != "all" || !since.empty()) return by_index(*store, job);
    int fd = open_log("job " + std::to_string(job.id), job.log_path);
    if (fd < 0 && !(follow && errno == ENOENT)) {
      if (job.backend != "local")
        throw Fatal("job " + std::to_string(job.id) + " ran on " + job.backend +
                    ": its output is " + job.log_path +
                    " on the cluster's file system, not readable here");
      throw Fatal("cannot read the log of job " + std::to_string(job.id) + ": " + job.log_path +
                  ": " + std::strerror(errno));
    }
    std::optional<LogReader> reader;
    uint64_t pos = 0;
    if (fd >= 0) {
      reader.emplace(fd, job.log_path);
      if (tail >= 0)
        pos = static_cast<uint64_t>(tail == 0 ? lseek(fd, 0, SEEK_END)
                                              : tail_offset(fd, tail, reader->gap()));
    }
    char buf[65536];
    for (;;) {
      if (fd < 0 && (fd = open_log("job " + std::to_string(job.id), job.log_path)) >= 0)
        reader.emplace(fd, job.log_path);
      ssize_t n = reader ? reader->read(pos, buf, sizeof buf) : 0;
      if (n > 0) {
        print(std::string(buf, static_cast<size_t>(n)));
        continue;
      }
      if (!follow) break;
      std::fflush(stdout);
      auto now = store->job(job.id);
      if (!now || is_final(now->state)) {
        // One more read: output written just before the job ended.
        if (reader) reader->print_to(pos);
        if (now) job = *now;
        break;
      }
      poll(nullptr, 0, 200);
    }
    if (fd >= 0) close(fd);
    // Following a job to its end is waiting for it: exit as `nodus run` would have.
    if (follow) {
      std::fflush(stdout);
      return exit_status_for(job);
    }
    return 0;
  }

  // A detached sweep's own log: what it would have printed on a terminal (cells started and
  // ended, the budget), then the last lines of each cell's output are `nodus logs s3:CELL`.
  int sweep_log(store::Store& store) const {
    auto sweep = store.find_sweep(id);
    if (!sweep) throw Fatal("unknown sweep '" + escape_control(id) + "': see nodus sweeps");
    std::string path = engine::sweep_log_path(store, sweep->id);
    int fd = open_log("sweep " + id, path);
    if (fd < 0)
      throw Fatal("sweep " + id + " ran attached (its events went to its terminal); each cell's " +
                  "output: nodus logs " + id + ":CELL (cells: nodus show " + id + ")");
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        print(std::string(buf, static_cast<size_t>(n)));
        continue;
      }
      if (!follow) break;
      std::fflush(stdout);
      auto now = store.sweep(sweep->id);
      if (!now || (now->state != "running" && now->state != "starting")) {
        while ((n = read(fd, buf, sizeof buf)) > 0) print(std::string(buf, static_cast<size_t>(n)));
        break;
      }
      poll(nullptr, 0, 200);
    }
    close(fd);
    return 0;
  }
};
}  // namespace

Command add_logs(CLI::App& app) {
  auto cmd = std::make_shared<LogsCommand>();
  CLI::App* sub = app.add_subcommand("logs", "print a job's output");
  set_examples(sub, {"nodus logs 42", "nodus logs -f resnet", "nodus logs 42 --tail 20",
                     "nodus logs 42 --stream stderr --since 10m", "nodus logs s3:2"});
  sub->add_option("job", cmd->id, "job id or name, a sweep (s3) or a sweep's cell (s3:2)")
      ->type_name("JOB|SWEEP")
      ->required();
  sub->add_flag("-f,--follow", cmd->follow,
                "keep printing until the job ends; exit with the job's exit status");
  sub->add_option("-n,--tail", cmd->tail, "only the last N lines (then follow with -f)")
      ->type_name("N")
      ->check(CLI::Range(0L, 1000000000L));
  sub->add_option("--stream", cmd->stream,
                  "stdout, stderr, or all (default: both, in the order they were printed)")
      ->type_name("stdout|stderr|all")
      ->check(one_of({"stdout", "stderr", "all"}))
      ->capture_default_str();
  sub->add_option("--since", cmd->since,
                  "only output printed in the last DURATION (30s, 10m; to the second)")
      ->type_name("DURATION")
      ->check(duration_value());
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
