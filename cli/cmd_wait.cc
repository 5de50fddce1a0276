// nodus wait JOB|SWEEP: blocks until the job or sweep ends and exits with its code: the job's
// own exit code (124 timeout, 122 cost cap, ...), or the sweep's (0 every cell completed, 1 a
// cell did not, 122 budget, 130 interrupted). A supervisor that died ends the wait too: the job
// is then lost (reconciled and billed like `nodus ps` does), the sweep 125.

#include <poll.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "cli/job_views.h"
#include "cli/live_status.h"
#include "cli/sweep_views.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/reconcile.h"
#include "engine/sweep_session.h"

namespace nodus::cli {

JobRecord find_job_or_throw(store::Store& store, const std::string& id);

namespace {

bool is_sweep_id(const std::string& id) {
  return id.size() > 1 && id[0] == 's' &&
         id.find_first_not_of("0123456789", 1) == std::string::npos;
}

struct WaitCommand {
  std::string id;

  int operator()() const {
    auto store = open_store();
    if (is_sweep_id(id) || (!store->find_job(id) && store->find_sweep(id)))
      return wait_sweep(*store);
    JobRecord job = find_job_or_throw(*store, id);
    for (bool said = false;; said = true) {
      engine::reconcile(*store);
      auto now = store->job(job.id);
      if (now && is_final(now->state)) {
        std::fprintf(stderr, "nodus: %s\n", end_of_job_line(*now).c_str());
        if (now->state == JobState::kCompleted) return 0;
        return now->exit_code.value_or(1);
      }
      // What it waits for, once: the job as the live view shows it.
      if (!said && now)
        std::fprintf(stderr, "nodus: waiting for %s\n",
                     now->started_at ? status_text(*now, wall_seconds(*now)).c_str()
                                     : ("job " + std::to_string(now->id) + " (" +
                                        std::string(to_string(now->state)) + ")")
                                           .c_str());
      poll(nullptr, 0, 200);
    }
  }

  int wait_sweep(store::Store& store) const {
    auto sweep = store.find_sweep(id);
    if (!sweep) throw Fatal("unknown sweep '" + escape_control(id) + "': see nodus sweeps");
    for (int dead_checks = 0, polls = 0;; ++polls) {
      auto now = store.sweep(sweep->id);
      if (polls == 0 && (now->state == "running" || now->state == "starting")) {
        auto cells = store.sweep_cells(now->id);
        int ended = 0;
        for (const auto& job : cells) ended += is_final(job.state);
        std::fprintf(stderr, "nodus: waiting for sweep %s (%s): %d of %d cells ended, %s so far\n",
                     sweep_label(*now).c_str(), now->state.c_str(), ended,
                     now->definition->value("cells", static_cast<int>(cells.size())),
                     format_usd(sweep_spent_now(store, now->id, cells)).c_str());
      }
      if (now->state != "running" && now->state != "starting") {
        std::fprintf(stderr, "nodus: sweep %s %s, total %s\n", sweep_label(*now).c_str(),
                     now->state.c_str(), format_usd(store.sweep_spent(now->id)).c_str());
        return engine::sweep_exit_code(now->state);
      }
      bool alive = now->supervisor_pid != 0 &&
                   store::process_alive(now->supervisor_pid, now->supervisor_start);
      // "starting" without a supervisor yet is a detached sweep being handed over; give it time.
      if (!alive && (now->state == "running" || ++dead_checks > 100)) {
        // Read once more: the supervisor may have written its end just before exiting.
        auto last = store.sweep(sweep->id);
        if (last->state != "running" && last->state != "starting") continue;
        throw Fatal("sweep " + sweep_label(*now) + ": its supervisor (pid " +
                    std::to_string(now->supervisor_pid) +
                    ") is gone and the sweep did not record an end; `nodus sweep --resume " + "s" +
                    std::to_string(now->id) + "` runs the cells that did not complete");
      }
      poll(nullptr, 0, 200);
    }
  }
};

}  // namespace

Command add_wait(CLI::App& app) {
  auto cmd = std::make_shared<WaitCommand>();
  CLI::App* sub =
      app.add_subcommand("wait", "wait for a job or sweep to end; exit with its exit code");
  set_examples(sub, {"nodus wait 42", "nodus wait s3 && nodus show s3"});
  sub->add_option("id", cmd->id, "job id or name, or sweep id (s3) or name")
      ->type_name("JOB|SWEEP")
      ->required();
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
