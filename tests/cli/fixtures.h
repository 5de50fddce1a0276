#pragma once
// Shared pieces of the CLI integration tests: a catalog with a "TEST" GPU at $900/GPU-hour, so
// that four of them (kTestGpu, "TEST:4") cost $1 a second and cost caps bite within seconds (a
// catalog rate may not exceed $1000/GPU-hour), and helpers to read nodus's JSON output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/nodus_process.h"

namespace nodus::testing {

// $1 a second: --gpu kTestGpu with NODUS_LOCAL_GPUS=TEST:4 (or TEST:8 for two at once).
inline constexpr const char* kTestGpu = "TEST:4";

inline std::string write_test_prices(const NodusHome& home) {
  std::string path = home.file("prices.json");
  write_file(path, R"({"gpus": [
  {"type": "TEST", "aliases": ["T1"], "usd_per_gpu_hour": 900, "source": "tests", "checked": "2026-11-29", "device_names": ["Test GPU"]},
  {"type": "H100-SXM", "aliases": ["H100"], "usd_per_gpu_hour": 2.6, "source": "tests", "checked": "2026-11-29", "device_names": ["H100 80GB HBM3"]}
]}
)");
  return path;
}

inline nlohmann::json show_json(const NodusHome& home, const std::string& id) {
  auto r = home.run({"show", id, "--format", "json"});
  return nlohmann::json::parse(r.out);
}

// The bill of a job its cap stopped (show's json): within the cap, or past it by no more than
// `slack_s` seconds of its rate (the kill's own latency on a loaded machine) and then with the
// overrun named in its note. A bill is what ran, never a figure made to fit the cap
// (engine/supervisor.cc billed_cost).
inline ::testing::AssertionResult billed_within_cap(const nlohmann::json& job, double cap,
                                                    double usd_per_second, double slack_s = 0.5) {
  if (!job.is_object() || !job["cost_usd"].is_number())
    return ::testing::AssertionFailure() << "no bill: " << job.dump();
  const double cost = job["cost_usd"].get<double>();
  if (cost <= cap) return ::testing::AssertionSuccess();
  if (cost > cap + usd_per_second * slack_s)
    return ::testing::AssertionFailure() << "billed " << cost << ", past the cap " << cap
                                         << " by more than the kill may take: " << job.dump();
  if (job.value("note", std::string()).find("past its cap") == std::string::npos)
    return ::testing::AssertionFailure()
           << "billed " << cost << " past the cap " << cap << " without saying so: " << job.dump();
  return ::testing::AssertionSuccess();
}

}  // namespace nodus::testing
