// nodus stop JOB: stop a job from another terminal. Its supervisor gets SIGTERM and stops the
// job's whole tree (SIGTERM, SIGKILL after the grace period) and records it as stopped.

#include <poll.h>
#include <signal.h>

#include <cstdio>

#include "backend/backend.h"
#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/parse.h"
#include "engine/reconcile.h"

namespace nodus::cli {

JobRecord find_job_or_throw(store::Store& store, const std::string& id);

namespace {

struct StopCommand {
  std::vector<std::string> ids;

  int operator()() const {
    auto store = open_store();
    int rc = 0;
    for (const auto& id : ids) rc = std::max(rc, stop(*store, id));
    return rc;
  }

  int stop(store::Store& store, const std::string& id) const {
    JobRecord job = find_job_or_throw(store, id);
    if (is_final(job.state)) {
      std::fprintf(stderr, "nodus: job %lld already ended (%s)\n", static_cast<long long>(job.id),
                   std::string(to_string(job.state)).c_str());
      return 0;
    }
    if (store::process_alive(job.supervisor_pid, job.supervisor_start)) {
      if (::kill(static_cast<pid_t>(job.supervisor_pid), SIGTERM) != 0)
        throw Fatal("cannot signal the supervisor of job " + id + " (pid " +
                    std::to_string(job.supervisor_pid) + "): permission denied");
    } else if (job.backend != "local") {
      // Nobody watches this cluster job: cancel it there and record it.
      auto backend = backend::make_backend(job.backend);
      value_or_throw(backend->kill(job));
      // Bill it from the cluster's own start and end times (kill returned once it ended).
      auto refreshed = backend->refresh(job);
      if (!refreshed || !job.ended_at) job.ended_at = unix_now();
      job.state = JobState::kStopped;
      job.exit_code = 128 + SIGTERM;
      store.update_job(job);
    } else {
      engine::reconcile(store);
    }
    // Wait for the supervisor to record the end: grace period plus a margin.
    double until = unix_now() + job.grace_ms / 1000.0 + 10;
    for (;;) {
      auto now = store.job(job.id);
      if (now && is_final(now->state)) {
        std::printf("%lld %s %s\n", static_cast<long long>(now->id),
                    std::string(to_string(now->state)).c_str(), format_usd(now->cost).c_str());
        return 0;
      }
      if (unix_now() > until) throw Fatal("job " + id + " did not stop in time; see nodus ps");
      poll(nullptr, 0, 50);
    }
  }
};
}  // namespace

Command add_stop(CLI::App& app) {
  auto cmd = std::make_shared<StopCommand>();
  CLI::App* sub = app.add_subcommand("stop", "stop running jobs");
  set_examples(sub, {"nodus stop 42", "nodus stop resnet tune-2"});
  sub->add_option("job", cmd->ids, "job ids or names")->type_name("JOB")->required();
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
