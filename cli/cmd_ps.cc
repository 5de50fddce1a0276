// nodus ps: running and recent jobs (-a: all).

#include "cli/args.h"
#include "cli/common.h"
#include "cli/job_views.h"
#include "engine/reconcile.h"

namespace nodus::cli {

namespace {
struct PsCommand {
  bool all = false;
  int limit = 20;
  std::string format = "table";
  int operator()() const {
    Format f = format_from(format);
    auto store = open_store();
    engine::reconcile(*store);
    store::JobFilter filter;
    filter.all = all;
    filter.limit = all ? 1'000'000 : limit;
    print(jobs_table(store->jobs(filter)).render(f));
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
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
