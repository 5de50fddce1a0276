#include "store/gpu_locks.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "core/config.h"
#include "core/error.h"
#include "core/proc.h"
#include "store/store.h"

namespace nodus::store {
namespace {

constexpr const char* kRunDir = "/run/nodus/gpus";
constexpr const char* kTmpDir = "/tmp/nodus-gpus";

// The descriptors this process holds, per (store, job).
struct Held {
  std::mutex mu;
  std::map<std::pair<std::string, int64_t>, std::vector<std::pair<int, int>>> fds;  // index, fd
};
Held& held() {
  static Held h;
  return h;
}

std::string sys_error(const std::string& what, const std::string& path) {
  return "GPU locks: cannot " + what + " " + path + ": " + std::strerror(errno);
}

// mkdir -p, the last folder shared by every user (sticky, like /tmp).
bool make_dirs(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  auto slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash))) return false;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return false;
  return true;
}

bool usable(const std::string& dir) {
  if (!make_dirs(dir)) return false;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (st.st_uid == ::geteuid() && (st.st_mode & 07777) != 01777) ::chmod(dir.c_str(), 01777);
  return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

std::string file_of(int index) { return gpu_lock_dir() + "/gpu" + std::to_string(index) + ".lock"; }

// Opens the lock file of a GPU, creating it readable and writable by every user.
int open_lock(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) throw Fatal(sys_error("open", path));
  struct stat st {};
  // Only when it differs (once, after the umask): a chmod wakes every GpuReleaseWatch.
  if (::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 07777) != 0666)
    ::fchmod(fd, 0666);
  return fd;
}

// True when fd is still the file at path (nobody replaced it between open and flock).
bool same_file(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

// What a lock file says of its holder: "pid P", "job J", "store S" and, once the job's cgroup
// exists, "cgroup C", a line each.
GpuHolder parse_holder(const std::string& text) {
  GpuHolder holder;
  std::istringstream in(text);
  std::string key;
  while (in >> key) {
    if (key == "pid") {
      in >> holder.pid;
    } else if (key == "job") {
      in >> holder.job_id;
    } else if (key == "store" || key == "cgroup") {
      in.get();
      std::getline(in, key == "store" ? holder.store : holder.cgroup);
    }
  }
  return holder;
}

GpuHolder read_holder(int fd) {
  char buf[4096];
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  return parse_holder(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0));
}

void write_holder(int fd, int64_t job_id, const std::string& store_path) {
  std::string text = "pid " + std::to_string(::getpid()) + "\njob " + std::to_string(job_id) +
                     "\nstore " + store_path + "\n";
  if (::ftruncate(fd, 0) != 0) return;  // the lock holds without it; only `gpus` says less
  ssize_t ignored = ::pwrite(fd, text.data(), text.size(), 0);
  (void)ignored;
}

}  // namespace

std::string gpu_lock_dir() {
  if (auto dir = config_env("gpu_locks")) {
    if (!usable(*dir))
      throw Fatal("NODUS_GPU_LOCKS=" + *dir + ": not a folder nodus can create and write (" +
                  std::strerror(errno) + ")");
    return *dir;
  }
  static const std::string chosen = [] {
    if (usable(kRunDir)) return std::string(kRunDir);
    if (usable(kTmpDir)) return std::string(kTmpDir);
    throw Fatal(std::string("GPU locks: neither ") + kRunDir + " nor " + kTmpDir +
                " can be created and written; set NODUS_GPU_LOCKS to a folder every nodus on "
                "this machine can write");
  }();
  return chosen;
}

namespace {

// The lock of GPU `index`, taken without writing its file: its descriptor, or -1 when someone
// holds it (or held it for a job whose processes still run).
int take_lock(int index) {
  const std::string path = file_of(index);
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = open_lock(path);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return -1;
      errno = err;
      throw Fatal(sys_error("lock", path));
    }
    if (!same_file(fd, path)) {  // replaced under us: lock the file that is there now
      ::close(fd);
      continue;
    }
    // Its last holder died without releasing it (a release empties the file) and the job it
    // held it for still has processes on the GPU: still in use.
    if (job_cgroup_populated(read_holder(fd).cgroup)) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  return -1;
}

void keep_lock(int index, int fd, int64_t job_id, const std::string& store_path) {
  write_holder(fd, job_id, store_path);
  Held& h = held();
  std::lock_guard g(h.mu);
  h.fds[{store_path, job_id}].push_back({index, fd});
}

}  // namespace

bool lock_gpu(int index, int64_t job_id, const std::string& store_path) {
  int fd = take_lock(index);
  if (fd < 0) return false;
  keep_lock(index, fd, job_id, store_path);
  return true;
}

std::optional<std::vector<int>> lock_gpus(const std::vector<int>& candidates, int count,
                                          int64_t job_id, const std::string& store_path,
                                          int leave_free) {
  std::vector<std::pair<int, int>> taken;  // index, fd
  const int needed = count + std::max(0, leave_free);
  try {
    for (int index : candidates) {
      if (static_cast<int>(taken.size()) == needed) break;
      if (int fd = take_lock(index); fd >= 0) taken.push_back({index, fd});
    }
  } catch (...) {
    for (auto [index, fd] : taken) ::close(fd);
    throw;
  }
  if (static_cast<int>(taken.size()) < needed) {
    for (auto [index, fd] : taken) ::close(fd);  // unwritten: as it was before
    return std::nullopt;
  }
  while (static_cast<int>(taken.size()) > count) {  // the ones left free, as they were
    ::close(taken.back().second);
    taken.pop_back();
  }
  std::vector<int> out;
  for (auto [index, fd] : taken) {
    keep_lock(index, fd, job_id, store_path);
    out.push_back(index);
  }
  return out;
}

GpuReleaseWatch::GpuReleaseWatch() {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) return;
  try {
    // IN_DELETE: a waiter left the queue (gpu_queue.h), so what it held back is free to claim.
    if (::inotify_add_watch(fd_, gpu_lock_dir().c_str(), IN_MODIFY | IN_ATTRIB | IN_DELETE) >= 0)
      return;
  } catch (const Fatal&) {
  }
  ::close(fd_);
  fd_ = -1;
}

GpuReleaseWatch::~GpuReleaseWatch() {
  if (fd_ >= 0) ::close(fd_);
}

void GpuReleaseWatch::drain() {
  if (fd_ < 0) return;
  alignas(inotify_event) char buf[4096];
  while (::read(fd_, buf, sizeof buf) > 0) {
  }
}

void unlock_gpus(int64_t job_id, const std::string& store_path) {
  Held& h = held();
  std::lock_guard g(h.mu);
  auto it = h.fds.find({store_path, job_id});
  if (it == h.fds.end()) return;
  for (auto [index, fd] : it->second) {
    (void)index;
    // Emptied first so nobody reads a stale holder; the unlock happens either way. Then its
    // times touched, after the unlock: a GpuReleaseWatch woken by that finds the GPU free (the
    // emptying wakes it too, but while the lock is still held; closing unlocks only after the
    // close's own event).
    if (::ftruncate(fd, 0) != 0) errno = 0;
    ::flock(fd, LOCK_UN);
    ::futimens(fd, nullptr);
    ::close(fd);
  }
  h.fds.erase(it);
}

std::vector<int> locked_gpus(int64_t job_id, const std::string& store_path) {
  Held& h = held();
  std::lock_guard g(h.mu);
  std::vector<int> out;
  auto it = h.fds.find({store_path, job_id});
  if (it != h.fds.end())
    for (auto [index, fd] : it->second) out.push_back(index);
  return out;
}

std::optional<GpuHolder> gpu_holder(int index) {
  const std::string path = file_of(index);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  // A shared lock succeeds only when nobody holds the exclusive one: then the GPU is free,
  // unless the job of a holder that died still runs.
  const bool unlocked = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  GpuHolder holder = read_holder(fd);
  ::close(fd);
  if (unlocked) {
    if (!job_cgroup_populated(holder.cgroup)) return std::nullopt;
    holder.orphaned = true;
  }
  return holder;
}

void note_gpu_cgroup(const std::vector<int>& indices, int64_t job_id, const std::string& store_path,
                     const std::string& cgroup) {
  if (cgroup.empty() || cgroup.find('\n') != std::string::npos) return;
  for (int index : indices) {
    const std::string path = file_of(index);
    int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    GpuHolder holder = read_holder(fd);  // pread: O_APPEND moves only the writes
    if (holder.job_id == job_id && holder.store == store_path && holder.cgroup.empty()) {
      const std::string line = "cgroup " + cgroup + "\n";
      ssize_t ignored = ::write(fd, line.data(), line.size());
      (void)ignored;
    }
    ::close(fd);
  }
}

bool job_cgroup_populated(const std::string& cgroup) {
  if (cgroup.empty() || cgroup.find("/.") != std::string::npos) return false;
  const auto slash = cgroup.rfind('/');
  if (slash == std::string::npos || cgroup.compare(slash + 1, 4, "job-") != 0) return false;
  auto mountinfo = read_small_file("/proc/self/mountinfo");
  auto mount = mountinfo ? cgroup2_mount(*mountinfo) : std::nullopt;
  if (!mount || cgroup.rfind(*mount + "/", 0) != 0) return false;
  auto events = read_small_file(cgroup + "/cgroup.events");
  return events && events->find("populated 1") != std::string::npos;
}

}  // namespace nodus::store
