#pragma once
// Shared pieces of the CLI integration tests: a catalog with a "TEST" GPU at $900/GPU-hour, so
// that four of them (kTestGpu, "TEST:4") cost $1 a second and cost caps bite within seconds (a
// catalog rate may not exceed $1000/GPU-hour), and helpers to read nodus's JSON output.

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

}  // namespace nodus::testing
