// nodus stop JOB: stop a job from another terminal. Its supervisor gets SIGTERM and stops the
// job's whole tree (SIGTERM, SIGKILL after the grace period) and records it as stopped.

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "backend/backend.h"
#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/lifecycle.h"
#include "core/parse.h"
#include "core/proc.h"
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
    bool sweep_form =
        id.size() > 1 && id[0] == 's' && id.find_first_not_of("0123456789", 1) == std::string::npos;
    if (sweep_form || (!store.find_job(id) && store.find_sweep(id))) return stop_sweep(store, id);
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
      // A stopped supervisor (SIGSTOP) cannot act on it; nor can one that does not answer.
      if (job.backend == "local" && process_stopped(static_cast<pid_t>(job.supervisor_pid)))
        return force(store, job, "stopped");
    } else if (job.backend != "local") {
      // Nobody watches this cluster job: cancel it there and record it.
      auto backend = backend::make_backend(job.backend);
      value_or_throw(backend->kill(job));
      // Bill it from the cluster's own start and end times (kill returned once it ended). A job
      // the cluster records as ended by itself first (completed, failed) keeps that end.
      auto refreshed = backend->refresh(job);
      if (!refreshed || !is_final(job.state)) end_job(job, {JobState::kStopped});
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
      if (unix_now() > until) {
        if (job.backend == "local" && now && !is_final(now->state) &&
            store::process_alive(now->supervisor_pid, now->supervisor_start))
          return force(store, *now, "did not answer in time");
        throw Fatal("job " + id + " did not stop in time; see nodus ps");
      }
      poll(nullptr, 0, 50);
    }
  }

  // The supervisor cannot stop the job: stop it without it (engine::force_end).
  int force(store::Store& store, const JobRecord& job, const std::string& what) const {
    const std::string why = "its supervisor (pid " + std::to_string(job.supervisor_pid) + ") " +
                            what + ": nodus stop killed it and the job's cgroup";
    std::fprintf(stderr, "nodus: job %lld: %s\n", static_cast<long long>(job.id), why.c_str());
    JobRecord ended = engine::force_end(store, job, JobState::kStopped, why);
    std::printf("%lld %s %s\n", static_cast<long long>(ended.id),
                std::string(to_string(ended.state)).c_str(), format_usd(ended.cost).c_str());
    return 0;
  }

  // A sweep's supervisor gets SIGTERM: its scheduler stops first (no cell starts after it), then
  // it stops the running cells (each through its own supervisor, as `nodus stop JOB` would) and
  // records the sweep as stopped (exit 143, as a stopped job; Ctrl-C is interrupted, 130).
  int stop_sweep(store::Store& store, const std::string& id) const {
    auto sweep = store.find_sweep(id);
    if (!sweep) throw Fatal("unknown sweep '" + id + "': see nodus sweeps");
    const std::string label = "s" + std::to_string(sweep->id);
    if (sweep->state != "running" && sweep->state != "starting") {
      std::fprintf(stderr, "nodus: sweep %s already ended (%s)\n", label.c_str(),
                   sweep->state.c_str());
      return 0;
    }
    if (!store::process_alive(sweep->supervisor_pid, sweep->supervisor_start))
      throw Fatal("sweep " + label + " has no live supervisor (pid " +
                  std::to_string(sweep->supervisor_pid) +
                  "); its cells died with it: see nodus ps");
    if (::kill(static_cast<pid_t>(sweep->supervisor_pid), SIGTERM) != 0)
      throw Fatal("cannot signal the supervisor of sweep " + label + " (pid " +
                  std::to_string(sweep->supervisor_pid) + "): permission denied");
    // Its running cells get their grace period; wait for the longest plus a margin.
    int64_t grace_ms = 0;
    for (const auto& job : store.sweep_cells(sweep->id))
      grace_ms = std::max(grace_ms, job.grace_ms);
    double until = unix_now() + grace_ms / 1000.0 + 15;
    for (;;) {
      auto now = store.sweep(sweep->id);
      if (now && now->state != "running" && now->state != "starting") {
        std::printf("%s %s %s\n", label.c_str(), now->state.c_str(),
                    format_usd(store.sweep_spent(now->id)).c_str());
        return 0;
      }
      if (unix_now() > until) throw Fatal("sweep " + label + " did not stop in time; see nodus ps");
      poll(nullptr, 0, 50);
    }
  }
};
}  // namespace

Command add_stop(CLI::App& app) {
  auto cmd = std::make_shared<StopCommand>();
  CLI::App* sub = app.add_subcommand("stop", "stop running jobs or sweeps");
  set_examples(sub, {"nodus stop 42", "nodus stop resnet tune-2", "nodus stop s3"});
  sub->add_option("job", cmd->ids, "job ids or names, or sweep ids (s3)")
      ->type_name("JOB|SWEEP")
      ->required();
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
