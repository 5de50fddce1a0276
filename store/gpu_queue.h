#pragma once
// The machine-wide queue of claims waiting for GPUs. Claims are all or none: a job that needs 4
// GPUs waits for 4 to be free at once, while a sweep of 1-GPU cells takes each GPU as it frees,
// so without a queue the 4-GPU job waits until the sweep has no cells left (hours, on a big
// grid). Every nodus on the machine shares the GPU lock folder (gpu_locks.h); a claimant that
// waits joins the queue there (GpuWaiter), and every claim of the same GPU type made after it
// leaves enough GPUs free for the oldest waiter (gpus_to_leave) once that one has waited
// gpu_queue_after (NODUS_GPU_QUEUE_AFTER, 10 s by default). The oldest waiter is then served when
// enough GPUs free up, as Slurm serves its highest-priority pending job, without backfill: a GPU
// may stay idle for a while so that the wide job ever starts. Before that, claims that fit pass it
// over: holding GPUs idle for every short wait cost 4% of the bench's makespan of two sweeps (1
// and 2 GPUs a cell, 0.5-3 s cells on 8 GPUs: 8.42 s against 8.10 s, a lower bound of 7.68 s).
//
// A waiter is a file wait-<when>-<pid> in gpu_lock_dir(), named by when it began to wait, holding
// its GPU type and count, and locked (flock) by its process for as long as it waits; its removal
// wakes every GpuReleaseWatch, as a release does. A file whose
// lock is free belongs to a process that died: it is skipped and removed. A waiter whose count
// is more than the claimant's inventory has of its type cannot be served from what the claimant
// sees, and holds nothing back.

#include <optional>
#include <string>
#include <vector>

namespace nodus::store {

class GpuWaiter {
 public:
  // Joins the queue now, for `count` GPUs of `type`; `who` says for what, to the others ("job 5 of
  // /root/.local/share/nodus/nodus.db"). Throws Fatal when the folder cannot be used.
  GpuWaiter(const std::string& type, int count, const std::string& who);
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
  std::string who_;
  std::string place_;
  std::string path_;
  int fd_ = -1;
};

// A waiter as the others see it.
struct QueuedClaim {
  std::string type;
  int count = 0;
  std::string who;
  long long pid = 0;
  double since = 0;  // unix seconds
};

// The live waiters, oldest first (a dead waiter's file is removed on the way).
std::vector<QueuedClaim> gpu_queue();

// The oldest live waiter for GPUs of `type` (case-insensitive) queued before `mine` (before
// every claimant that is not waiting: mine == nullptr) that has waited gpu_queue_after, unless it
// asks for more than `available` (the GPUs of that type the claimant's inventory has), which it
// could never get.
std::optional<QueuedClaim> first_in_line(const std::string& type, int available,
                                         const GpuWaiter* mine);

// How many GPUs of `type` a claim must leave free: what first_in_line needs, else 0.
int gpus_to_leave(const std::string& type, int available, const GpuWaiter* mine);

}  // namespace nodus::store
