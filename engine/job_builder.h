#pragma once
// From what the user typed to a priced, validated job row. Bad input throws Fatal with a
// one-line message before anything is written to the store.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/local/inventory.h"
#include "billing/catalog.h"
#include "core/job.h"
#include "core/parse.h"
#include "engine/supervise_options.h"
#include "store/store.h"

namespace nodus::engine {

struct JobRequest {
  std::vector<std::string> argv;
  std::string name;
  std::string backend = "local";
  GpuRequest gpu;
  std::optional<double> max_cost;
  std::optional<Millis> timeout;
  Millis grace{10'000};
  std::map<std::string, std::string> env;
  std::string workdir;
  std::string image;
  SuperviseOptions supervise;
  // --rate: the USD per hour actually paid, instead of the catalog's rate; per GPU, or for the
  // whole box when rate_per_box (then each of the job's GPUs bills rate / count).
  std::optional<double> rate;
  bool rate_per_box = false;
  // NODUS_LOCAL_USD_PER_HOUR: the local machine's hourly rate, for local jobs without GPUs.
  std::optional<double> box_rate;
};

// The GPUs of this machine (local backend) and where that list came from: the local backend's
// own type, so the inventory it detects is what jobs are checked against and claim from.
using Inventory = backend::local::Inventory;

// Validates the request against the catalog (and, for the local backend, the inventory) and
// returns the job's row, state waiting, not yet inserted.
JobRecord build_job(const JobRequest& request, const billing::Catalog& catalog,
                    const Inventory* inventory);

// Inserts the row and fills in the paths that depend on its id (log, metrics file).
void insert_job(store::Store& store, JobRecord& job);

}  // namespace nodus::engine
