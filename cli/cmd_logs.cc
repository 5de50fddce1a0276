// nodus logs JOB [-f]: the job's output, as it was printed (stdout and stderr interleaved).

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/common.h"
#include "core/error.h"
#include "store/store.h"

namespace nodus::cli {

JobRecord find_job_or_throw(store::Store& store, const std::string& id) {
  auto job = store.find_job(id);
  if (!job) throw Fatal("unknown job '" + id + "': see nodus ps -a for job ids and names");
  return *job;
}

namespace {

struct LogsCommand {
  std::string id;
  bool follow = false;

  int operator()() const {
    auto store = open_store();
    JobRecord job = find_job_or_throw(*store, id);
    int fd = open(job.log_path.c_str(), O_RDONLY | O_CLOEXEC);
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
      if (fd < 0) fd = open(job.log_path.c_str(), O_RDONLY | O_CLOEXEC);
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
};
}  // namespace

Command add_logs(CLI::App& app) {
  auto cmd = std::make_shared<LogsCommand>();
  CLI::App* sub = app.add_subcommand("logs", "print a job's output");
  sub->add_option("job", cmd->id, "job id or name")->required();
  sub->add_flag("-f,--follow", cmd->follow, "keep printing until the job ends");
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
