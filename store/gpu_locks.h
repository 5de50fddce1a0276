#pragma once
// Machine-wide GPU locks: one lock file per GPU index in one folder that every store on the
// machine uses (config key gpu_locks, NODUS_GPU_LOCKS; default /run/nodus/gpus, or
// /tmp/nodus-gpus where /run cannot be written). A GPU is held while an open file description of
// its file holds flock(LOCK_EX), or its claim name is bound (below): the kernel drops both when
// the holder exits, however it dies, so no cleanup is ever needed and a crash never keeps a GPU.
// The store's gpu_claims table says which of its jobs holds a GPU; these files say that some
// store on the machine does, and which.
//
// The locks are taken by, and belong to, the calling process (its descriptors are close-on-exec,
// so jobs never inherit them). A process releases a job's locks with unlock_gpus(job_id).
// A lock file can be deleted while held (a job's `rm -f $NODUS_GPU_LOCKS/gpu*.lock`, a tmp
// cleaner removing the folder), and a flock on a deleted file excludes nobody who opens a new
// file of that name. So a claim also binds a socket in Linux's abstract namespace, named after
// the folder and the GPU (one name for every user sharing the folder), which no `rm` reaches and
// the kernel frees only when its holder's last descriptor closes: a GPU is granted only when its
// file is locked and its name bound (ARCHITECTURE.md, "GPU claims").
//
// A job outlives its lock when its nodus processes die without ending it (a job that stops its
// supervisor and kills its sentinel, then the supervisor is killed): the kernel drops the lock
// while the job's processes still run on the GPU. So the lock file also names the job's cgroup
// (note_gpu_cgroup, once it exists), a normal release empties the file, and a file whose lock is
// free but which still names a cgroup with processes in it is a GPU still in use: lock_gpu
// refuses it and gpu_holder reports it (orphaned) until those processes are gone.

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
  std::string store;      // the holder's store file
  std::string cgroup;     // the job's cgroup, once note_gpu_cgroup named it
  bool orphaned = false;  // nobody holds the lock, but the job's processes still run in cgroup
  // Held through its claim name by a claimant whose lock file was removed: nothing says who
  // (the fields above are empty).
  bool lock_file_removed = false;
};

// Locks GPU `index` for job_id of the store at store_path, without waiting. False when another
// open file (another process, or another job of this one) holds it. Throws Fatal when the
// folder or the file cannot be used.
bool lock_gpu(int index, int64_t job_id, const std::string& store_path);

// Locks `count` GPUs of `candidates` (in that order) for job_id, without waiting: the indices
// locked, or nullopt when fewer than `count` could be (then none stays locked). An attempt that
// fails writes no lock file, so it wakes no GpuReleaseWatch (below): only a claim, a release or
// a cgroup noted does.
// With leave_free > 0 it also needs that many more of candidates free (locked for a moment,
// unwritten, and let go), or it locks none.
std::optional<std::vector<int>> lock_gpus(const std::vector<int>& candidates, int count,
                                          int64_t job_id, const std::string& store_path,
                                          int leave_free = 0);

// Wakes a process waiting for GPUs when a lock file changes (inotify on the folder, IN_MODIFY and
// IN_ATTRIB): a claim writes a file; a release empties it and, once unlocked, touches its times;
// and when a waiter leaves the queue (IN_DELETE, gpu_queue.h).
// Not when a holder dies without releasing (the kernel drops its lock and the file stays as it
// was), so a waiter still looks again now and then. fd() polls readable after a change; drain()
// empties it before the next look, and watches the folder anew when it was removed (a release
// whose file was removed touches the file now at its path, if any, to wake the new folder's
// watchers).
class GpuReleaseWatch {
 public:
  GpuReleaseWatch();  // fd() is -1 where inotify cannot watch the folder
  ~GpuReleaseWatch();
  GpuReleaseWatch(const GpuReleaseWatch&) = delete;
  GpuReleaseWatch& operator=(const GpuReleaseWatch&) = delete;
  int fd() const { return fd_; }
  void drain();

 private:
  bool watch_folder();
  int fd_ = -1;
};

// Records the job's cgroup in the lock files of `indices` that name job_id of store_path as
// their holder (the lock may belong to another process: a sweep's runner claims its cells'
// GPUs). Best effort: a file it cannot write keeps the lock's own guarantee.
void note_gpu_cgroup(const std::vector<int>& indices, int64_t job_id, const std::string& store_path,
                     const std::string& cgroup);

// True when `cgroup` is a job's cgroup (a folder named job-* under the cgroup2 mount) that
// has processes in it now.
bool job_cgroup_populated(const std::string& cgroup);

// Releases every GPU this process locked for job_id of the store at store_path.
void unlock_gpus(int64_t job_id, const std::string& store_path);

// The holder of GPU `index`, or nullopt when it is free (or its file says nothing readable):
// the live holder of its lock, one whose lock died with it while its job still runs
// (orphaned), or one whose lock file was removed while it holds the claim name
// (lock_file_removed).
std::optional<GpuHolder> gpu_holder(int index);

// The GPUs this process holds for job_id of the store at store_path.
std::vector<int> locked_gpus(int64_t job_id, const std::string& store_path);

}  // namespace nodus::store
