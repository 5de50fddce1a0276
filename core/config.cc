#include "core/config.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "core/parse.h"

namespace nodus {

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = {
      {"home", "NODUS_HOME", "",
       "store folder (default $XDG_DATA_HOME/nodus or ~/.local/share/nodus)"},
      {"backend", "NODUS_BACKEND", "local", "backend for run and sweep: local or slurm"},
      {"local_gpus", "NODUS_LOCAL_GPUS", "",
       "declared GPU inventory, e.g. H100:4,L4:2 (else nvidia-smi)"},
      {"gpu_locks", "NODUS_GPU_LOCKS", "",
       "folder of the machine-wide GPU locks every store shares (default /run/nodus/gpus, else "
       "/tmp/nodus-gpus)"},
      {"gpu_queue_after", "NODUS_GPU_QUEUE_AFTER", "10s",
       "how long a job waiting for GPUs may be passed over by later claims that fit, before they "
       "leave it the GPUs it waits for (0: first come, first served at once)"},
      {"prices", "NODUS_PRICES", "",
       "user price catalog, merged over the built-in one: a JSON file or an https URL"},
      {"prices_only", "NODUS_PRICES_ONLY", "0",
       "1: the user price catalog stands alone, without the built-in entries"},
      {"local_usd_per_hour", "NODUS_LOCAL_USD_PER_HOUR", "",
       "what this machine costs per hour (USD): the rate of local jobs without --gpu"},
      {"slurm_url", "NODUS_SLURM_URL", "",
       "slurmrestd endpoint: unix:///path.sock or http(s)://host:port", true},
      {"slurm_jwt", "SLURM_JWT", "", "JWT for slurmrestd over http(s)", true},
      {"slurm_user", "NODUS_SLURM_USER", "", "user name sent to slurmrestd (default: login name)"},
      {"slurm_api", "NODUS_SLURM_API", "v0.0.38", "slurmrestd API version"},
      {"slurm_gres_map", "NODUS_SLURM_GRES", "",
       "catalog type -> GRES type, e.g. H100-SXM=h100,L4=l4"},
      {"slurm_workdir", "NODUS_SLURM_WORKDIR", "",
       "shared folder for job scripts and output on Slurm"},
      {"slurm_partition", "NODUS_SLURM_PARTITION", "", "Slurm partition (default: the cluster's)"},
      {"slurm_containers", "NODUS_SLURM_CONTAINERS", "none",
       "whether the Slurm cluster runs jobs in containers: none (--image is refused) or oci "
       "(Slurm's oci.conf is set up on its nodes)",
       false, "none oci"},
      {"nvidia_smi", "NODUS_NVIDIA_SMI", "nvidia-smi",
       "nvidia-smi executable used for the inventory"},
      {"cgroup", "NODUS_CGROUP", "auto",
       "local job containment: auto (a cgroup v2 per job where one can be made) or off", false,
       "auto off"},
      {"cpusets", "NODUS_CPUSETS", "auto",
       "local jobs with GPUs run on their GPUs' share of the CPUs: auto or off", false, "auto off"},
  };
  return keys;
}

static const ConfigKey& find_key(const std::string& key) {
  for (const auto& k : config_keys())
    if (key == k.key) return k;
  throw std::logic_error("unknown config key " + key);
}

std::optional<std::string> config_env(const std::string& key) {
  const char* v = std::getenv(find_key(key).env);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string config_get(const std::string& key) {
  if (auto v = config_env(key)) return *v;
  return find_key(key).default_value;
}

std::chrono::milliseconds gpu_queue_after() {
  const std::string text = config_get("gpu_queue_after");
  if (text == "0") return std::chrono::milliseconds(0);
  auto d = parse_duration(text, "NODUS_GPU_QUEUE_AFTER");
  if (!d || d->count() < 0)
    throw Fatal("NODUS_GPU_QUEUE_AFTER: invalid value '" + text +
                "': expected a duration (10s, 1m) or 0");
  return *d;
}

void check_config_choices() {
  gpu_queue_after();  // a duration: refused before anything runs, not at a sweep's tenth claim
  for (const auto& k : config_keys()) {
    auto value = config_env(k.key);
    if (k.choices == nullptr || !value) continue;
    std::istringstream words(k.choices);
    std::string choice, allowed;
    bool found = false;
    while (words >> choice) {
      found |= choice == *value;
      allowed += (allowed.empty() ? "" : " or ") + choice;
    }
    if (!found)
      throw Fatal(std::string(k.env) + ": invalid value '" + *value + "': expected " + allowed);
  }
}

std::string nodus_home() {
  if (auto v = config_env("home")) return *v;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
    return std::string(xdg) + "/nodus";
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    if (const passwd* pw = getpwuid(getuid())) home = pw->pw_dir;
  }
  return std::string(home ? home : "/tmp") + "/.local/share/nodus";
}

bool is_tty(int fd) { return isatty(fd) == 1; }

bool use_color(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string(term) == "dumb") return false;
  return is_tty(fd);
}

}  // namespace nodus
