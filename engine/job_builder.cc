#include "engine/job_builder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace nodus::engine {
namespace {

std::string describe_inventory(const Inventory& inv) {
  std::map<std::string, int> counts;
  for (const auto& g : inv.gpus) counts[g.type]++;
  std::string s;
  for (const auto& [type, n] : counts)
    s += (s.empty() ? "" : ", ") + type + " x" + std::to_string(n);
  return s;
}

void check_inventory(const JobRequest& r, const std::string& type, const Inventory& inv) {
  int have = 0;
  for (const auto& g : inv.gpus) have += g.type == type;
  std::string spec = "--gpu " + r.gpu.type + ":" + std::to_string(r.gpu.count);
  if (inv.gpus.empty())
    throw Fatal(spec + ": no GPUs found on this machine (" +
                (inv.note.empty() ? inv.source : inv.note) +
                "); declare them with NODUS_LOCAL_GPUS, e.g. NODUS_LOCAL_GPUS=" + type + ":1");
  if (have == 0)
    throw Fatal(spec + ": this machine has no " + type + " GPUs; it has " +
                describe_inventory(inv) + " (from " + inv.source + ")");
  if (r.gpu.count > have)
    throw Fatal(spec + ": more than this machine has: " + std::to_string(have) + " " + type +
                " (from " + inv.source + ")");
}

}  // namespace

JobRecord build_job(const JobRequest& r, const billing::Catalog& catalog,
                    const Inventory* inventory) {
  if (r.argv.empty())
    throw Fatal("no command given: usage: nodus run [options] -- COMMAND [ARGS...]");
  JobRecord job;
  job.argv = r.argv;
  job.name = r.name;
  job.backend = r.backend;
  job.env = r.env;
  job.image = r.image;
  job.max_cost = r.max_cost;
  if (r.timeout) job.timeout_ms = r.timeout->count();
  job.grace_ms = r.grace.count();
  job.options = r.supervise.to_json();
  job.created_at = unix_now();  // waiting, as every new record is (core/lifecycle.h)

  if (!r.gpu.none()) {
    const billing::PriceEntry* entry = value_or_throw(catalog.lookup(r.gpu.type));
    job.gpu_type = entry->type;
    job.gpu_count = r.gpu.count * r.supervise.nodes;  // every node's GPUs (core/job.h nodes_of)
    job.rate_per_gpu_hour = entry->usd_per_gpu_hour;
    // The GPU's dense peak arithmetic, for the job's MFU (engine/measure.h), as the catalog had
    // it when the job started.
    if (entry->peak)
      (*job.options)["peak_tflops"] = {
          {"type", entry->type},           {"bf16", entry->peak->bf16},
          {"tf32", entry->peak->tf32},     {"fp32", entry->peak->fp32},
          {"source", entry->peak->source}, {"checked", entry->peak->checked}};
    if (inventory) {
      check_inventory(r, entry->type, *inventory);
      job.inventory_source = inventory->source;
    }
  } else if (r.backend == "local" && r.box_rate) {
    job.rate_per_gpu_hour = *r.box_rate;  // a job without GPUs bills one unit (core/cost.h)
  }
  if (r.rate) {
    // The rate actually paid; for the box, split over the box's GPUs so GPUs x rate is the box
    // (a box per node for a multi-node job).
    job.rate_per_gpu_hour = r.rate_per_box && r.gpu.count > 1 ? *r.rate / r.gpu.count : *r.rate;
  }
  if (r.max_cost && job.gpu_count == 0 && job.rate_per_gpu_hour <= 0)
    throw Fatal("--max-cost " + format_usd(*r.max_cost) +
                ": a CPU-only job has no rate to cap; give --rate USD_PER_HOUR, declare the "
                "machine's rate in NODUS_LOCAL_USD_PER_HOUR, add --gpu TYPE[:COUNT] or use "
                "--timeout");

  if (r.backend == "local") {
    std::error_code ec;
    std::string dir = r.workdir.empty() ? std::filesystem::current_path(ec).string() : r.workdir;
    if (!std::filesystem::is_directory(dir, ec))
      throw Fatal("--workdir: '" + dir + "' is not a directory");
    job.workdir = std::filesystem::absolute(dir, ec).string();
  } else {
    job.workdir = r.workdir;
  }
  return job;
}

void insert_job(store::Store& store, JobRecord& job) {
  // The row and its paths (named by its id) in one commit: no reader sees a job without them.
  store.together([&] {
    job.id = store.insert_job(job);
    std::string folder = store.folder();
    for (const char* sub : {"/logs", "/metrics"}) ::mkdir((folder + sub).c_str(), 0700);
    job.log_path = folder + "/logs/" + std::to_string(job.id) + ".log";
    job.metrics_path = folder + "/metrics/" + std::to_string(job.id) + ".jsonl";
    store.update_job(job);
  });
}

}  // namespace nodus::engine
