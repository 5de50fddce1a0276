#pragma once
// The machine-wide queue of claims waiting for GPUs. Claims are all or none: a job that needs 4
// GPUs waits for 4 to be free at once, while a sweep of 1-GPU cells takes each GPU as it frees,
// so without a queue the 4-GPU job waits until the sweep has no cells left (hours, on a big
// grid). Every nodus on the machine shares the GPU lock folder (gpu_locks.h); a claimant that
// waits joins the queue there (GpuWaiter), and every claim of the same GPU type made after it
// leaves enough GPUs free for the oldest waiter (gpus_to_leave). The oldest waiter is served
// when enough GPUs free up, as Slurm serves its highest-priority pending job, without backfill:
// a GPU may stay idle for a while so that the wide job ever starts.
//
// A waiter is a file wait-<when>-<pid> in gpu_lock_dir(), named by when it began to wait, holding
// its GPU type and count, and locked (flock) by its process for as long as it waits; its removal
// wakes every GpuReleaseWatch, as a release does. A file whose
// lock is free belongs to a process that died: it is skipped and removed. A waiter whose count
// is more than the claimant's inventory has of its type cannot be served from what the claimant
// sees, and holds nothing back.

#include <string>

namespace nodus::store {

class GpuWaiter {
 public:
  // Joins the queue now, for `count` GPUs of `type`. Throws Fatal when the folder cannot be used.
  GpuWaiter(const std::string& type, int count);
  ~GpuWaiter();  // leaves the queue
  GpuWaiter(const GpuWaiter&) = delete;
  GpuWaiter& operator=(const GpuWaiter&) = delete;

  // The place keeps; the count is what the waiter needs now (a sweep's first cell that waits).
  void want(const std::string& type, int count);
  const std::string& type() const { return type_; }
  int count() const { return count_; }
  const std::string& place() const { return place_; }  // the file's name: older sorts first

 private:
  void write();
  std::string type_;
  int count_ = 0;
  std::string place_;
  std::string path_;
  int fd_ = -1;
};

// How many GPUs of `type` a claim must leave free: the count of the oldest live waiter for
// that type (case-insensitive) queued before `mine` (before every claimant that is not waiting:
// mine == nullptr), 0 when there is none or when `available` (the GPUs of that type the claimant's
// inventory has) could never serve it.
int gpus_to_leave(const std::string& type, int available, const GpuWaiter* mine);

}  // namespace nodus::store
