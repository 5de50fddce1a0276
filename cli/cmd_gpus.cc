// nodus gpus: the GPUs of this machine as nodus sees them: type, price, and which job holds each.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "core/parse.h"
#include "engine/reconcile.h"
#include "store/gpu_locks.h"
#include "store/gpu_queue.h"

namespace nodus::cli {
namespace {
struct GpusCommand {
  std::string prices;
  std::string format = "table";
  int operator()() const {
    Format f = format_from(format);
    billing::Catalog catalog = load_catalog(prices);
    engine::Inventory inv = local_inventory(catalog);
    auto store = open_store();
    // What holds a GPU now: a dead supervisor's job is ended, and its orphans are killed.
    engine::reconcile(*store);
    std::map<int, int64_t> holder;
    for (const auto& job : store->active_jobs())
      for (int g : job.gpu_indices) holder[g] = job.id;
    Table t({{"index", "INDEX", true},
             {"type", "TYPE"},
             {"name", "NAME"},
             {"usd_per_gpu_hour", "$/GPU-HOUR", true},
             {"job", "JOB"},
             {"other_store", "", false, Show::kMachine}});
    for (const auto& g : inv.gpus) {
      const auto* entry = catalog.find(g.type);
      auto it = holder.find(g.index);
      // A GPU no job of this store holds may be held by another store's job on this machine.
      std::optional<store::GpuHolder> other;
      if (it == holder.end()) {
        other = store::gpu_holder(g.index);
        if (other && other->store == store->path() && !other->orphaned && !other->lock_file_removed)
          other.reset();
      }
      std::string shown = it != holder.end() ? std::to_string(it->second)
                          : !other           ? "free"
                          : other->lock_file_removed
                              ? "held (its lock file was removed)"
                              : "job " + std::to_string(other->job_id) + " of " +
                                    (other->store.empty() ? "another store" : other->store) +
                                    (other->orphaned ? " (its nodus is gone, it still runs)" : "");
      nlohmann::json held_by;
      if (other)
        held_by = {{"job", other->job_id},
                   {"store", other->store},
                   {"pid", other->pid},
                   {"orphaned", other->orphaned},
                   {"lock_file_removed", other->lock_file_removed}};
      t.add_row(
          {std::to_string(g.index), g.type, g.name,
           entry ? format_usd(entry->usd_per_gpu_hour) : "-", shown},
          {{"index", g.index},
           {"type", g.type},
           {"name", g.name},
           {"usd_per_gpu_hour", entry ? nlohmann::json(entry->usd_per_gpu_hour) : nlohmann::json()},
           {"job", it == holder.end() ? nlohmann::json() : nlohmann::json(it->second)},
           {"other_store", held_by}});
    }
    print(t.render(f));
    if (f == Format::kTable) {
      std::fprintf(stderr, "nodus: GPUs from %s%s\n", inv.source.c_str(),
                   inv.note.empty() ? "" : (": " + inv.note).c_str());
      // Waiting claims, served first come, first served (store/gpu_queue.h): why a GPU shown
      // free may not go to the next job that asks for it.
      int place = 0;
      for (const auto& w : store::gpu_queue())
        std::fprintf(stderr, "nodus: waiting #%d: %d x %s for %s (pid %lld, since %s)\n", ++place,
                     w.count, w.type.c_str(), w.who.empty() ? "?" : w.who.c_str(), w.pid,
                     ago(w.since).c_str());
    }
    return 0;
  }
};
}  // namespace

Command add_gpus(CLI::App& app) {
  auto cmd = std::make_shared<GpusCommand>();
  CLI::App* sub =
      app.add_subcommand("gpus", "list this machine's GPUs, their price and the job holding each");
  set_examples(sub, {"nodus gpus", "nodus gpus --format json"});
  sub->add_option("--prices", cmd->prices, "price catalog: a JSON file or an https URL")
      ->type_name("FILE|URL");
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
