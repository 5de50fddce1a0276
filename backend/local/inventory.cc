#include "backend/local/inventory.h"

#include <chrono>
#include <map>

#include "backend/local/launch.h"
#include "backend/local/run_capture.h"
#include "core/config.h"
#include "core/parse.h"
#include "core/strings.h"

namespace nodus::backend::local {
namespace {

constexpr auto kNvidiaSmiTimeout = std::chrono::seconds(15);
constexpr const char* kDeclareHint = "set NODUS_LOCAL_GPUS (e.g. H100:4,L4:2) to declare them";

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    parts.push_back(
        std::string(trim(s.substr(start, end == std::string_view::npos ? end : end - start))));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string known_types(const billing::Catalog& catalog) {
  std::string out;
  for (const auto& e : catalog.entries()) out += (out.empty() ? "" : ", ") + e.type;
  return out;
}

Inventory none(const std::string& why) {
  return Inventory{{}, "none", "no GPUs found: " + why + "; " + kDeclareHint};
}

}  // namespace

Result<Inventory> parse_declared_gpus(std::string_view spec, const billing::Catalog& catalog) {
  const std::string value(trim(spec));
  const std::string named = "NODUS_LOCAL_GPUS='" + value + "'";
  Inventory inv{{}, "NODUS_LOCAL_GPUS", ""};
  if (to_lower(value) == "none") {
    inv.note = "NODUS_LOCAL_GPUS=none declares no GPUs";
    return inv;
  }
  for (const std::string& item : split(value, ',')) {
    auto request = parse_gpu_request(item);
    if (!request.ok() || request->none())
      return Error::permanent(named + ": '" + item +
                              "' is not TYPE:COUNT; expected e.g. H100:4,L4:2");
    const billing::PriceEntry* entry = catalog.find(request->type);
    if (entry == nullptr)
      return Error::permanent(named + ": unknown GPU type '" + request->type +
                              "'; known types: " + known_types(catalog));
    for (int i = 0; i < request->count; ++i) {
      store::Gpu gpu;
      gpu.index = static_cast<int>(inv.gpus.size());
      gpu.type = entry->type;
      gpu.name = request->type;
      inv.gpus.push_back(gpu);
    }
  }
  return inv;
}

Result<Inventory> parse_nvidia_smi_inventory(std::string_view csv,
                                             const billing::Catalog& catalog) {
  Inventory inv{{}, "nvidia-smi", ""};
  std::map<std::string, std::string> unknown;  // driver name -> its indices, "0, 1"
  int line_no = 0;
  for (const std::string& line : split(csv, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> f = split(line, ',');
    const std::string bad = "nvidia-smi output line " + std::to_string(line_no) + " '" + line +
                            "': expected index, name, uuid, memory.total";
    if (f.size() < 4) return Error::permanent(bad);
    store::Gpu gpu;
    try {
      size_t used = 0;
      gpu.index = std::stoi(f[0], &used);
      if (used != f[0].size() || gpu.index < 0) return Error::permanent(bad);
    } catch (const std::exception&) {
      return Error::permanent(bad);
    }
    // A name with commas in it spans several fields: everything between index and uuid.
    for (size_t i = 1; i + 2 < f.size(); ++i) gpu.name += (i > 1 ? ", " : "") + f[i];
    gpu.uuid = f[f.size() - 2];
    if (gpu.name.empty()) return Error::permanent(bad);
    if (const billing::PriceEntry* entry = catalog.match_device_name(gpu.name)) {
      gpu.type = entry->type;
    } else {
      gpu.type = gpu.name;
      std::string& indices = unknown[gpu.name];
      indices += (indices.empty() ? "" : ", ") + std::to_string(gpu.index);
    }
    inv.gpus.push_back(gpu);
  }
  for (const auto& [name, indices] : unknown)
    inv.note += (inv.note.empty() ? "" : "; ") + std::string("no catalog type matches '") + name +
                "' (GPU " + indices + "): its type is the driver's name";
  return inv;
}

Result<Inventory> detect_local_inventory(const billing::Catalog& catalog) {
  if (auto declared = config_env("local_gpus")) return parse_declared_gpus(*declared, catalog);

  const std::string smi = config_get("nvidia_smi");
  auto run = run_capture(
      {smi, "--query-gpu=index,name,uuid,memory.total", "--format=csv,noheader,nounits"},
      merged_environment({}), kNvidiaSmiTimeout);
  if (!run.ok()) return none(run.error().message);
  if (run->timed_out)
    return none(smi + " did not answer within " + std::to_string(kNvidiaSmiTimeout.count()) + " s");
  if (run->exit_code != 0) {
    std::string why = first_line(run->err.empty() ? run->out : run->err);
    return none(smi + " failed with exit code " + std::to_string(run->exit_code) +
                (why.empty() ? "" : " (" + why + ")"));
  }
  auto inv = parse_nvidia_smi_inventory(run->out, catalog);
  if (!inv.ok()) return none(inv.error().message);
  if (inv->gpus.empty()) return none(smi + " lists no GPUs");
  return inv;
}

}  // namespace nodus::backend::local
