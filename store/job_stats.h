#pragma once
// JobStats: a job's derived figures as the store keeps them (Store::put_stats, Store::stats).
// Apart from store/store.h so that only the files that read or write them parse
// <nlohmann/json.hpp>.

#include <cstdint>
#include <nlohmann/json.hpp>

namespace nodus::store {

// Derived per-job figures (telemetry summary, throughput); filled when the job ends.
struct JobStats {
  int64_t job_id = 0;
  nlohmann::json values = nlohmann::json::object();  // e.g. util_mean, idle_usd, throughput
};

}  // namespace nodus::store
