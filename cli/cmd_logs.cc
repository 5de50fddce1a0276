// nodus logs JOB [-f]: the job's output, as it was printed (stdout and stderr interleaved).

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/args.h"
#include "cli/common.h"
#include "cli/sweep_command.h"
#include "core/error.h"
#include "core/text.h"
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
      auto grid = sweep::parse_grid(sweep->definition.value("params", std::vector<std::string>{}));
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

struct LogsCommand {
  std::string id;
  bool follow = false;

  int operator()() const {
    auto store = open_store();
    if (id.size() > 1 && id[0] == 's' && id.find_first_not_of("0123456789", 1) == std::string::npos)
      return sweep_log(*store);
    JobRecord job = find_job_or_throw(*store, id);
    int fd = open(job.log_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && !(follow && errno == ENOENT)) {
      if (job.backend != "local")
        throw Fatal("job " + std::to_string(job.id) + " ran on " + job.backend +
                    ": its output is " + job.log_path +
                    " on the cluster's file system, not readable here");
      throw Fatal("cannot read the log of job " + std::to_string(job.id) + ": " + job.log_path +
                  ": " + std::strerror(errno));
    }
    char buf[65536];
    for (;;) {
      if (fd < 0) fd = open(job.log_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : 0;
      if (n > 0) {
        print(std::string(buf, static_cast<size_t>(n)));
        continue;
      }
      if (!follow) break;
      std::fflush(stdout);
      auto now = store->job(job.id);
      if (!now || is_final(now->state)) {
        // One more read: output written just before the job ended.
        while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
          print(std::string(buf, static_cast<size_t>(n)));
        break;
      }
      poll(nullptr, 0, 200);
    }
    if (fd >= 0) close(fd);
    return 0;
  }

  // A detached sweep's own log: what it would have printed on a terminal (cells started and
  // ended, the budget), then the last lines of each cell's output are `nodus logs s3:CELL`.
  int sweep_log(store::Store& store) const {
    auto sweep = store.find_sweep(id);
    if (!sweep) throw Fatal("unknown sweep '" + escape_control(id) + "': see nodus sweeps");
    std::string path = sweep_log_path(store, sweep->id);
    int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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
  set_examples(sub, {"nodus logs 42", "nodus logs -f resnet"});
  sub->add_option("job", cmd->id, "job id or name, a sweep (s3) or a sweep's cell (s3:2)")
      ->type_name("JOB|SWEEP")
      ->required();
  sub->add_flag("-f,--follow", cmd->follow, "keep printing until the job ends");
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
