#pragma once
// CPU sets per job: jobs that share a host with GPUs get disjoint sets of CPUs, so cells run
// side by side do not slow each other down by fighting over cores (two num_workers=0 cells on one
// host each start as many threads as the host has cores). Slurm does the same with
// --cpus-per-gpu; nodus gives each GPU of the host a fixed share of its CPUs and a job the shares
// of the GPUs it holds. GPU claims are exclusive (store/store.h), so CPU sets are too, across
// every nodus process on the host, with nothing more to store.
//
// A GPU's share: when the host's topology is known (each GPU's PCI local_cpulist in sysfs),
// the CPUs local to that GPU split evenly among the GPUs local to the same CPUs; else every CPU
// nodus may use split evenly among the GPUs. Shares are made of whole cores (hyperthread
// siblings stay together). `--cpus-per-gpu N` takes the first N CPUs of each share.
//
// Only jobs holding GPUs get a set (a CPU-only job keeps every core, as before).
// NODUS_CPUSETS=off (config key `cpusets`) turns CPU sets off.

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace nodus::backend::local {

// "0-3,8,10-11" <-> {0,1,2,3,8,10,11}. Parsing: nullopt on anything else (sorted, unique out).
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);
std::string format_cpu_list(const std::vector<int>& cpus);

struct HostTopology {
  std::vector<int> cpus;                    // CPUs jobs may use (nodus's own affinity)
  int gpus = 0;                             // GPUs on the host (indices 0..gpus-1)
  std::vector<std::vector<int>> gpu_local;  // by GPU index: its local CPUs; empty: unknown
  std::map<int, int> core_of;               // CPU -> the first CPU of its core (siblings)
  std::string source;                       // where gpus and gpu_local come from
};

// The host as it is: nodus's affinity; the GPU count from NODUS_LOCAL_GPUS when declared (no
// topology: declared GPUs have no PCI address), else the NVIDIA display/3D controllers in
// /sys/bus/pci/devices in PCI address order (nvidia-smi's index order) with their local_cpulist.
HostTopology detect_topology();

// Each GPU's share (by GPU index). Disjoint unless the host has fewer CPUs than GPUs (then
// GPUs share CPUs round-robin). Pure.
std::vector<std::vector<int>> gpu_shares(const HostTopology& host);

struct CpuPlan {
  std::vector<int> cpus;  // empty: no CPU set
  std::string note;       // for the job's note
};

// The CPU set of a job holding `gpu_indices`. An error (exit 125): cpus_per_gpu above a GPU's
// share (naming the share). A GPU index the topology does not show gives no set and a note
// saying so (the job runs as before). Pure.
Result<CpuPlan> plan_cpus(const HostTopology& host, const std::vector<int>& gpu_indices,
                          std::optional<int> cpus_per_gpu);

// Environment the job gets for its set: NODUS_CPUS (the list), and OMP_NUM_THREADS,
// MKL_NUM_THREADS, OPENBLAS_NUM_THREADS (the count) where `env` ("NAME=value", the job's whole
// environment) does not already set them.
std::map<std::string, std::string> cpu_environment(const std::vector<int>& cpus,
                                                   const std::vector<std::string>& env);

// The num_workers of the job's busiest DataLoader (the Python hook's `loaders` list and its
// `driver`, telemetry/pyhook) when it exceeds the job's CPUs: its worker processes then take
// turns on the cores, and more of them cannot help. nullopt otherwise, or when unknown. Pure.
std::optional<int> workers_over_cpus(const nlohmann::json& loaders, const std::string& driver,
                                     int cpus);

// The environment variable that tells the job its CPUs.
inline constexpr const char* kCpusEnv = "NODUS_CPUS";

}  // namespace nodus::backend::local
