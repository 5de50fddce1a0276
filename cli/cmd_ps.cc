// nodus ps: running and recent jobs (-a: all).

#include "cli/args.h"
#include "cli/common.h"
#include "cli/job_views.h"
#include "core/error.h"
#include "core/table_fields.h"
#include "engine/reconcile.h"

namespace nodus::cli {

namespace {
struct PsCommand {
  bool all = false;
  int limit = 20;
  std::string format = "table";
  std::string sweep;
  std::string state;
  int operator()() const {
    Format f = format_from(format);
    auto store = open_store_to_read();
    reconcile_to_read(*store);
    store::JobFilter filter;
    filter.all = all || !sweep.empty();
    filter.limit = filter.all ? 1'000'000 : limit;
    if (!sweep.empty()) {
      auto found = store->find_sweep(sweep);
      if (!found) throw Fatal("--sweep: unknown sweep '" + sweep + "': see nodus sweeps");
      filter.sweep_id = found->id;
    }
    // Row by row, as the store reads them: memory stays flat in the store's size (`ps -a`).
    // table and md keep the rows they measured in a temporary file rather than read the store
    // twice (each row read is its JSON parsed and its cells formatted again).
    TableWriter writer(columns_of(job_fields()), f, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    });
    writer.keep_measured_rows();
    store->each_job(filter, writer.passes(), [&](int pass, const JobRecord& job) {
      if (state.empty() || to_string(job.state) == state) feed_row(writer, job_fields(), pass, job);
    });
    writer.finish();
    return 0;
  }
};
}  // namespace

Command add_ps(CLI::App& app) {
  auto cmd = std::make_shared<PsCommand>();
  CLI::App* sub = app.add_subcommand("ps", "list running and recent jobs");
  set_examples(sub, {"nodus ps", "nodus ps -a --format json", "nodus ps -n 50"});
  sub->add_flag("-a,--all", cmd->all, "all jobs");
  sub->add_option("-n,--last", cmd->limit, "how many finished jobs to show")
      ->type_name("N")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  sub->add_option("--sweep", cmd->sweep, "only the jobs of this sweep (every one of them)")
      ->type_name("SWEEP");
  sub->add_option("--state", cmd->state, "only jobs in this state")
      ->type_name("STATE")
      ->check(CLI::IsMember({"waiting", "starting", "running", "completed", "failed", "timeout",
                             "cost-cap", "low-util", "stopped", "cancelled", "lost", "budget",
                             "tampered"}));
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
