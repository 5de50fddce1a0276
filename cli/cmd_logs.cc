// nodus logs JOB [-f]: the job's output, as it was printed (stdout and stderr interleaved).

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/text.h"
#include "store/store.h"

namespace nodus::cli {

// Every job command resolves the same way: "42" is job 42, "s3" is sweep 3 (never a job, since
// names of those forms are refused), anything else a job name.
JobRecord find_job_or_throw(store::Store& store, const std::string& id) {
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
};
}  // namespace

Command add_logs(CLI::App& app) {
  auto cmd = std::make_shared<LogsCommand>();
  CLI::App* sub = app.add_subcommand("logs", "print a job's output");
  set_examples(sub, {"nodus logs 42", "nodus logs -f resnet"});
  sub->add_option("job", cmd->id, "job id or name")->type_name("JOB")->required();
  sub->add_flag("-f,--follow", cmd->follow, "keep printing until the job ends");
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
