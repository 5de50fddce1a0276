#include "backend/local/cpuset.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "backend/local/launch.h"
#include "core/config.h"
#include "core/parse.h"
#include "core/proc.h"
#include "core/strings.h"

namespace nodus::backend::local {
namespace {

bool to_int(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

// The CPUs sorted so that hyperthread siblings are next to each other: a slice of the list is
// whole cores.
std::vector<int> by_core(std::vector<int> cpus, const std::map<int, int>& core_of) {
  auto core = [&](int c) {
    auto it = core_of.find(c);
    return it == core_of.end() ? c : it->second;
  };
  std::sort(cpus.begin(), cpus.end(),
            [&](int a, int b) { return std::make_pair(core(a), a) < std::make_pair(core(b), b); });
  return cpus;
}

// `gpus` GPUs share `cpus`: GPU k of them gets the k-th slice.
void split(const std::vector<int>& cpus, const std::vector<int>& gpus,
           std::vector<std::vector<int>>& out) {
  if (cpus.empty()) return;
  const size_t each = cpus.size() / gpus.size();
  for (size_t k = 0; k < gpus.size(); ++k) {
    std::vector<int> share;
    if (each == 0)
      share.push_back(cpus[k % cpus.size()]);
    else
      share.assign(cpus.begin() + static_cast<long>(k * each),
                   cpus.begin() + static_cast<long>((k + 1) * each));
    std::sort(share.begin(), share.end());
    out[gpus[k]] = share;
  }
}

int declared_gpu_count(const std::string& spec) {
  int n = 0;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    auto request = parse_gpu_request(trim(std::string_view(spec).substr(start, end - start)));
    if (request.ok() && !request->none()) n += request->count;
    start = end + 1;
  }
  return n;
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::set<int> out;
  const std::string all(trim(text));
  if (all.empty()) return std::vector<int>{};
  size_t start = 0;
  while (start <= all.size()) {
    size_t end = all.find(',', start);
    if (end == std::string::npos) end = all.size();
    std::string_view item = std::string_view(all).substr(start, end - start);
    size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!to_int(item, &lo)) return std::nullopt;
      hi = lo;
    } else if (!to_int(item.substr(0, dash), &lo) || !to_int(item.substr(dash + 1), &hi) ||
               hi < lo || hi - lo > 65536) {
      return std::nullopt;
    }
    for (int c = lo; c <= hi; ++c) out.insert(c);
    start = end + 1;
  }
  return std::vector<int>(out.begin(), out.end());
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::vector<int> s = cpus;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j + 1 < s.size() && s[j + 1] == s[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(s[i]);
    if (j > i) out += '-' + std::to_string(s[j]);
    i = j + 1;
  }
  return out;
}

HostTopology detect_topology() {
  HostTopology host;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) host.cpus.push_back(c);
  for (int c : host.cpus) {
    auto text = read_small_file("/sys/devices/system/cpu/cpu" + std::to_string(c) +
                                "/topology/thread_siblings_list");
    auto siblings = text ? parse_cpu_list(*text) : std::nullopt;
    if (siblings && !siblings->empty()) host.core_of[c] = siblings->front();
  }
  const std::string declared = config_get("local_gpus");
  if (!declared.empty()) {
    host.gpus = declared_gpu_count(declared);
    host.source = "NODUS_LOCAL_GPUS (no topology: CPUs split evenly)";
    return host;
  }
  // NVIDIA (vendor 0x10de) VGA (0x0300) and 3D (0x0302) controllers, by PCI address.
  std::vector<std::string> devices;
  if (DIR* dir = ::opendir("/sys/bus/pci/devices")) {
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      const std::string base = std::string("/sys/bus/pci/devices/") + e->d_name;
      auto vendor = read_small_file(base + "/vendor");
      auto cls = read_small_file(base + "/class");
      if (!vendor || trim(*vendor) != "0x10de" || !cls) continue;
      const std::string c(trim(*cls));
      if (c.rfind("0x0300", 0) == 0 || c.rfind("0x0302", 0) == 0) devices.push_back(base);
    }
    ::closedir(dir);
  }
  std::sort(devices.begin(), devices.end());
  host.gpus = static_cast<int>(devices.size());
  for (const std::string& d : devices) {
    auto text = read_small_file(d + "/local_cpulist");
    auto cpus = text ? parse_cpu_list(*text) : std::nullopt;
    host.gpu_local.push_back(cpus ? *cpus : std::vector<int>{});
  }
  host.source = "/sys/bus/pci/devices/*/local_cpulist";
  return host;
}

std::vector<std::vector<int>> gpu_shares(const HostTopology& host) {
  std::vector<std::vector<int>> out(std::max(host.gpus, 0));
  if (host.gpus <= 0 || host.cpus.empty()) return out;
  const std::set<int> usable(host.cpus.begin(), host.cpus.end());
  // Groups of GPUs with the same local CPUs (a NUMA node), when every GPU's are known and the
  // groups do not overlap.
  std::map<std::vector<int>, std::vector<int>> groups;  // local CPUs -> GPUs
  bool known = static_cast<int>(host.gpu_local.size()) == host.gpus;
  for (int g = 0; known && g < host.gpus; ++g) {
    std::vector<int> local;
    for (int c : host.gpu_local[g])
      if (usable.count(c)) local.push_back(c);
    if (local.empty()) known = false;
    groups[local].push_back(g);
  }
  if (known) {
    std::set<int> seen;
    for (const auto& [cpus, gpus] : groups)
      for (int c : cpus)
        if (!seen.insert(c).second) known = false;
  }
  if (!known) {
    std::vector<int> all(out.size());
    for (size_t g = 0; g < all.size(); ++g) all[g] = static_cast<int>(g);
    split(by_core(host.cpus, host.core_of), all, out);
    return out;
  }
  for (const auto& [cpus, gpus] : groups) split(by_core(cpus, host.core_of), gpus, out);
  return out;
}

Result<CpuPlan> plan_cpus(const HostTopology& host, const std::vector<int>& gpu_indices,
                          std::optional<int> cpus_per_gpu) {
  CpuPlan plan;
  if (gpu_indices.empty()) return plan;
  const auto shares = gpu_shares(host);
  std::set<int> cpus;
  for (int g : gpu_indices) {
    if (g < 0 || g >= static_cast<int>(shares.size())) {
      // GPUs the topology does not show (no PCI view in a container, say): run as before.
      plan.note = "no CPU set: GPU " + std::to_string(g) + " is not among the " +
                  std::to_string(shares.size()) + " GPUs of " + host.source;
      return plan;
    }
    const auto& share = shares[g];
    if (cpus_per_gpu && *cpus_per_gpu > static_cast<int>(share.size()))
      return Error::permanent(
          "--cpus-per-gpu " + std::to_string(*cpus_per_gpu) +
              ": each GPU's share of this host is " + std::to_string(share.size()) + " CPUs (" +
              std::to_string(host.cpus.size()) + " CPUs, " + std::to_string(host.gpus) +
              " GPUs); allowed: 1-" + std::to_string(share.size()),
          125);
    const size_t take = cpus_per_gpu ? static_cast<size_t>(*cpus_per_gpu) : share.size();
    // The share is whole cores first: take in core order.
    auto ordered = by_core(share, host.core_of);
    cpus.insert(ordered.begin(), ordered.begin() + static_cast<long>(take));
  }
  plan.cpus.assign(cpus.begin(), cpus.end());
  plan.note = "CPUs " + format_cpu_list(plan.cpus) + " (" + std::to_string(plan.cpus.size()) +
              " of " + std::to_string(host.cpus.size()) + ", by GPU share from " + host.source +
              ")";
  if (host.gpus > static_cast<int>(host.cpus.size()))
    plan.note += "; fewer CPUs than GPUs: GPUs share CPUs";
  return plan;
}

std::map<std::string, std::string> cpu_environment(const std::vector<int>& cpus,
                                                   const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  if (cpus.empty()) return out;
  out[kCpusEnv] = format_cpu_list(cpus);
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (env_value(env, name).empty()) out[name] = std::to_string(cpus.size());
  return out;
}

std::optional<int> workers_over_cpus(const nlohmann::json& loaders, const std::string& driver,
                                     int cpus) {
  if (cpus <= 0 || !loaders.is_array()) return std::nullopt;
  for (const auto& l : loaders) {
    if (!l.is_object() || (!driver.empty() && l.value("name", std::string()) != driver)) continue;
    const auto w = l.find("workers");
    if (w == l.end() || !w->is_number_integer()) continue;
    if (w->get<int>() > cpus) return w->get<int>();
  }
  return std::nullopt;
}

}  // namespace nodus::backend::local
