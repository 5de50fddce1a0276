#pragma once
// Machine-wide GPU locks: one lock file per GPU index in one folder that every store on the
// machine uses (config key gpu_locks, NODUS_GPU_LOCKS; default /run/nodus/gpus, or
// /tmp/nodus-gpus where /run cannot be written). A GPU is held while an open file description of
// its file holds flock(LOCK_EX): the kernel drops it when the holder exits, however it dies, so
// no cleanup is ever needed and a crash never keeps a GPU. The store's gpu_claims table says
// which of its jobs holds a GPU; these files say that some store on the machine does, and which.
//
// The locks are taken by, and belong to, the calling process (its descriptors are close-on-exec,
// so jobs never inherit them). A process releases a job's locks with unlock_gpus(job_id).
// What this cannot stop: a process of the same user deleting a held lock file, after which a
// second claimant locks a new file of the same name (ARCHITECTURE.md, "GPU claims").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nodus::store {

// The folder, created (mode 1777, like /tmp, so that every user's stores share it) if missing.
std::string gpu_lock_dir();

// Who holds a GPU, as its holder wrote it into the lock file.
struct GpuHolder {
  int64_t pid = 0;
  int64_t job_id = 0;
  std::string store;  // the holder's store file
};

// Locks GPU `index` for job_id of the store at store_path, without waiting. False when another
// open file (another process, or another job of this one) holds it. Throws Fatal when the
// folder or the file cannot be used.
bool lock_gpu(int index, int64_t job_id, const std::string& store_path);

// Releases every GPU this process locked for job_id of the store at store_path.
void unlock_gpus(int64_t job_id, const std::string& store_path);

// The holder of GPU `index`, or nullopt when it is free (or its file says nothing readable).
std::optional<GpuHolder> gpu_holder(int index);

// The GPUs this process holds for job_id of the store at store_path.
std::vector<int> locked_gpus(int64_t job_id, const std::string& store_path);

}  // namespace nodus::store
