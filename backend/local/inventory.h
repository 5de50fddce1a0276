#pragma once
// The GPUs of this machine that local jobs may claim: declared in NODUS_LOCAL_GPUS, else what
// nvidia-smi lists, else none. Indices are nvidia-smi's (CUDA_VISIBLE_DEVICES takes them).

#include <string>
#include <string_view>
#include <vector>

#include "billing/catalog.h"
#include "core/result.h"
#include "store/store.h"

namespace nodus::backend::local {

struct Inventory {
  std::vector<store::Gpu> gpus;
  std::string source;  // "NODUS_LOCAL_GPUS", "nvidia-smi" or "none"
  std::string note;    // why there are none, or which devices the catalog does not know
};

// NODUS_LOCAL_GPUS (config key local_gpus) if set; else nvidia-smi (config key nvidia_smi),
// with a timeout; else an empty inventory whose note says why. Only a bad NODUS_LOCAL_GPUS is
// an error.
Result<Inventory> detect_local_inventory(const billing::Catalog& catalog);

// "H100:4,L4:2" -> GPUs 0-3 of the catalog type of H100, 4-5 of L4; a bare type counts 1;
// "none" declares no GPUs. Errors name the value and, for an unknown type, the known types.
Result<Inventory> parse_declared_gpus(std::string_view spec, const billing::Catalog& catalog);

// Output of `nvidia-smi --query-gpu=index,name,uuid,memory.total --format=csv,noheader,nounits`,
// e.g. "0, NVIDIA H200, GPU-5b2c..., 143771". A device name the catalog does not match keeps
// the driver's name as its type and is named in the note.
Result<Inventory> parse_nvidia_smi_inventory(std::string_view csv, const billing::Catalog& catalog);

}  // namespace nodus::backend::local
