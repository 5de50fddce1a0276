// nodus run: one job, attached (default) or detached, with its caps enforced to the end.

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "backend/backend.h"
#include "billing/stop_plan.h"
#include "cli/args.h"
#include "cli/common.h"
#include "cli/job_views.h"
#include "cli/live_status.h"
#include "cli/spec_file.h"
#include "core/config.h"
#include "core/error.h"
#include "core/lifecycle.h"
#include "core/parse.h"
#include "core/secret.h"
#include "core/text.h"
#include "core/timing.h"
#include "engine/budget.h"
#include "engine/gpu_wait.h"
#include "engine/signals.h"
#include "engine/stop_controller.h"
#include "engine/supervisor.h"
#include "engine/supervisor_process.h"

namespace nodus::cli {
namespace {

struct RunCommand {
  RunFlags flags;
  bool detach = false;
  bool dry_run = false;
  std::string file;  // -f job.yaml

  // --dry-run: what would run, on what, at what rate, and when its caps would stop it; nothing
  // runs and nothing is stored.
  int print_dry_run(const JobRecord& job) const {
    std::string out = "would run: " + escape_control(command_line(redact_argv(job.argv))) + "\n";
    if (!job.image.empty()) out += "  image: " + job.image + "\n";
    if (job.gpu_count > 0)
      out += "  gpus: " + std::to_string(job.gpu_count) + " x " + job.gpu_type + " at " +
             format_usd(job.rate_per_gpu_hour) + "/GPU-hour (" +
             format_usd(job.rate_per_gpu_hour * job.gpu_count) + "/hour)\n";
    else
      out += std::string("  gpus: none") +
             (job.rate_per_gpu_hour > 0 ? ", billed " + format_usd(job.rate_per_gpu_hour) + "/hour"
                                        : ", not billed") +
             "\n";
    const auto plan = billing::plan_stop(job);
    if (plan) {
      const char* what = plan->reason == JobState::kTimeout ? "--timeout" : "--max-cost";
      char buf[160];
      std::snprintf(buf, sizeof buf, "  stop: %s, SIGTERM at %.1f s, SIGKILL at %.1f s\n", what,
                    plan->term_after.count(), plan->kill_after.count());
      out += buf;
    } else {
      out += "  stop: none (no --max-cost or --timeout: it runs until it ends)\n";
    }
    auto worst = engine::worst_case_cost(job.gpu_count, job.rate_per_gpu_hour, job.max_cost,
                                         job.timeout_ms, job.grace_ms);
    out += "  worst case: " + (worst ? format_usd(*worst) : std::string("unbounded")) + "\n";
    std::fputs(out.c_str(), stdout);
    if (auto warning = engine::plan_warning(
            plan, std::chrono::milliseconds(job.grace_ms),
            job.timeout_ms ? std::optional(std::chrono::milliseconds(*job.timeout_ms))
                           : std::nullopt))
      std::fprintf(stderr, "nodus: %s\n", warning->c_str());
    return 0;
  }

  // `job_id`, when given, gets the job's id once it is stored.
  int operator()(int64_t* job_id = nullptr) const {
    engine::JobRequest request = to_request(flags);
    // A CPU-only job has no catalog rate: not parsing the catalog keeps its launch short.
    billing::Catalog catalog = request.gpu.none() && flags.prices.empty()
                                   ? billing::Catalog()
                                   : load_catalog(flags.prices, flags.prices_only);
    std::optional<engine::Inventory> inventory;
    if (request.backend == "local" && !request.gpu.none()) inventory = local_inventory(catalog);
    JobRecord job = engine::build_job(request, catalog, inventory ? &*inventory : nullptr);
    if (dry_run) return print_dry_run(job);
    timing::step("job built");

    auto store = open_store();
    timing::step("store opened");
    // A job that needs no GPU claim starts now: its row is stored as starting in the commit that
    // inserts it (with the reconcile's, one commit instead of four).
    const bool starts_now = !detach && !inventory;
    store->together([&] {
      store->reconcile_dead_supervisors();
      timing::step("dead supervisors reconciled");
      job.supervisor_pid = getpid();
      job.supervisor_start = store::process_start_time(job.supervisor_pid);
      engine::insert_job(*store, job);
      if (starts_now) {
        move_job(job, JobState::kStarting);
        store->update_job(job);
      }
    });
    timing::step("job inserted");
    if (job_id) *job_id = job.id;
    if (detach) return run_detached(*store, job, request, inventory);

    engine::SignalWatch signals;
    if (inventory)
      std::fprintf(stderr, "nodus: job %lld: %d x %s at %s/GPU-hour (GPUs from %s)\n",
                   static_cast<long long>(job.id), job.gpu_count, job.gpu_type.c_str(),
                   format_usd(job.rate_per_gpu_hour).c_str(), inventory->source.c_str());
    if (inventory) {
      auto got = engine::acquire_gpus(*store, job, *inventory, flags.no_wait, &signals, true);
      if (got != engine::Acquired::kClaimed)
        return give_up(*store, job, got, signals.take().value_or(SIGINT),
                       engine::held_by_other_stores(*store, job.gpu_type, *inventory));
    }
    auto backend = backend::make_backend(job.backend);
    engine::Supervisor supervisor(*store, *backend);
    engine::SuperviseRun run;
    run.options = request.supervise;
    run.env = request.env;
    run.signals = &signals;
    LiveStatus status(job, !std::getenv("CI"));
    int rc = supervisor.run(job, run);
    status.stop();
    std::fprintf(stderr, "nodus: %s\n", end_of_job_line(job).c_str());
    timing::step("end reported");
    return rc;
  }

  int give_up(store::Store& store, JobRecord& job, engine::Acquired why, int signal,
              const std::string& elsewhere) const {
    engine::end_unstarted(store, job, why, signal);
    if (why == engine::Acquired::kBusy)
      throw Fatal("--no-wait: not enough free " + job.gpu_type + " GPUs for --gpu " + job.gpu_type +
                  ":" + std::to_string(job.gpu_count) + " right now (job " +
                  std::to_string(job.id) + " not started)" + elsewhere);
    std::fprintf(stderr, "nodus: job %lld %s while waiting for GPUs\n",
                 static_cast<long long>(job.id), std::string(to_string(job.state)).c_str());
    return exit_status_for(job);
  }

  int run_detached(store::Store& store, JobRecord& job, const engine::JobRequest& request,
                   const std::optional<engine::Inventory>& inventory) const {
    engine::Ticket ticket;
    ticket.job_id = job.id;
    ticket.env = request.env;
    ticket.argv = request.argv;  // the store keeps it redacted
    ticket.no_wait = flags.no_wait;
    if (inventory) ticket.inventory = *inventory;
    auto spawned = value_or_throw(engine::spawn_supervisor(ticket));
    // The supervisor owns the row from here on; the status line says how the launch went.
    auto status = engine::parse_status_line(engine::read_status_line(spawned.status_fd));
    close(spawned.status_fd);
    using Kind = engine::LaunchStatus::Kind;
    if (status.kind == Kind::kError) throw Fatal(status.message, status.code);
    if (status.kind == Kind::kNone)
      throw Fatal("the supervisor of job " + std::to_string(job.id) + " exited before starting it");
    std::printf("%lld\n", static_cast<long long>(job.id));
    if (status.kind == Kind::kWaiting)
      std::fprintf(stderr, "nodus: job %lld is waiting for GPUs\n", static_cast<long long>(job.id));
    return 0;
  }
};

}  // namespace

int run_attached(const RunFlags& flags, int64_t* job_id) {
  RunCommand cmd;
  cmd.flags = flags;
  return cmd(job_id);
}

Command add_run(CLI::App& app) {
  auto cmd = std::make_shared<RunCommand>();
  CLI::App* sub = app.add_subcommand("run", "run a job with cost and time caps");
  takes_command(sub);
  set_examples(sub, {"nodus run --gpu H100:2 --max-cost 5 --timeout 2h -- python train.py",
                     "nodus run -d --gpu L4 --max-cost 1 --name tune -- python train.py --lr 3e-4",
                     "nodus run --timeout 90s -- ./preprocess.sh data/"});
  add_run_flags(sub, cmd->flags);
  sub->add_flag("--dry-run", cmd->dry_run,
                "print what would run, its rate, when its caps stop it and its worst-case cost; "
                "run nothing");
  sub->add_flag("-d,--detach", cmd->detach,
                "print the job id and return; a background supervisor enforces the caps");
  sub->add_option("-f,--file", cmd->file,
                  "read the job from a spec file (YAML; flags given here win over it)")
      ->type_name("FILE");
  return {sub, [cmd, sub] {
            cmd->flags.command = job_command();
            if (!cmd->file.empty()) apply_spec_file(cmd->file, *sub, cmd->flags, nullptr);
            return (*cmd)();
          }};
}

}  // namespace nodus::cli
