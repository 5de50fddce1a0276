#include "store/gpu_locks.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
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

// One GPU this process holds: its lock file (open and flock'd), where that file was, and the
// socket bound to the GPU's claim name (claim_address).
struct HeldGpu {
  int index = -1;
  int fd = -1;
  int sock = -1;
  std::string path;
};

// What this process holds, per (store, job).
struct Held {
  std::mutex mu;
  std::map<std::pair<std::string, int64_t>, std::vector<HeldGpu>> gpus;
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

// The claim name of GPU `index` in the abstract namespace: "nodus-gpu-<folder key>-<index>". An
// abstract socket has no file, so `rm` cannot remove it, and the kernel frees its name only when
// the last descriptor of the socket that bound it closes: it lives exactly as long as its holder,
// as the flock does, whatever happens to the lock folder. The key is the lock folder's path
// hashed, not the uid: every user's nodus that shares the folder must contend for the same name,
// and a nodus with another folder (each test has its own) must not. Abstract names belong to a
// network namespace; nodus processes in different ones still exclude each other by the flock.
sockaddr_un claim_address(int index, socklen_t& len) {
  std::error_code ec;
  const std::string dir = gpu_lock_dir();
  auto canonical = std::filesystem::weakly_canonical(dir, ec);
  const std::string key = ec ? dir : canonical.string();
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a 64
  for (unsigned char c : key) hash = (hash ^ c) * 1099511628211ULL;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // sun_path[0] stays '\0': the abstract namespace. The name is the bytes after it, unterminated.
  const int n = std::snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "nodus-gpu-%016llx-%d",
                              static_cast<unsigned long long>(hash), index);
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return addr;
}

// Binds GPU `index`'s claim name: the socket, or -1 when another socket holds the name.
// Close-on-exec, as the lock file's descriptor is: a job that inherited it would keep the GPU
// claimed after its nodus is gone, beyond what the cgroup note (gpu_locks.h) accounts for.
int bind_claim(int index) {
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) throw Fatal(sys_error("create a socket for", "GPU " + std::to_string(index)));
  socklen_t len = 0;
  const sockaddr_un addr = claim_address(index, len);
  if (::bind(sock, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    ::close(sock);
    if (err == EADDRINUSE) return -1;
    errno = err;
    throw Fatal(sys_error("bind the claim name of", "GPU " + std::to_string(index)));
  }
  // Nothing is ever read from it: senders get EPIPE instead of filling its buffer.
  ::shutdown(sock, SHUT_RD);
  return sock;
}

// True when some socket holds GPU `index`'s claim name. A connect, not a bind: a bind to look
// would hold the name for a moment and make a real claim fail.
bool claim_bound(int index) {
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return false;
  socklen_t len = 0;
  const sockaddr_un addr = claim_address(index, len);
  const bool bound = ::connect(sock, reinterpret_cast<const sockaddr*>(&addr), len) == 0 ||
                     errno != ECONNREFUSED;  // another type of socket holding the name holds it
  ::close(sock);
  return bound;
}

void let_go(const HeldGpu& gpu) {
  if (gpu.sock >= 0) ::close(gpu.sock);
  ::close(gpu.fd);
}

// The lock of GPU `index`, taken without writing its file: locked (flock) and its claim name
// bound, or nullopt when someone holds either (or held it for a job whose processes still run).
std::optional<HeldGpu> take_lock(int index) {
  const std::string path = file_of(index);
  for (int attempt = 0; attempt < 3; ++attempt) {
    HeldGpu gpu{index, open_lock(path), -1, path};
    if (::flock(gpu.fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(gpu.fd);
      if (err == EWOULDBLOCK) return std::nullopt;
      errno = err;
      throw Fatal(sys_error("lock", path));
    }
    if (!same_file(gpu.fd, path)) {  // replaced under us: lock the file that is there now
      ::close(gpu.fd);
      continue;
    }
    // Its last holder died without releasing it (a release empties the file) and the job it
    // held it for still has processes on the GPU: still in use.
    if (job_cgroup_populated(read_holder(gpu.fd).cgroup)) {
      ::close(gpu.fd);
      return std::nullopt;
    }
    // The file was free, but a holder whose lock file was removed (rm, a tmp cleaner) still has
    // the name: the flock of a new file at the same path excludes nobody.
    try {
      gpu.sock = bind_claim(index);
    } catch (...) {
      ::close(gpu.fd);
      throw;
    }
    if (gpu.sock < 0) {
      ::close(gpu.fd);
      return std::nullopt;
    }
    return gpu;
  }
  return std::nullopt;
}

void keep_lock(HeldGpu gpu, int64_t job_id, const std::string& store_path) {
  write_holder(gpu.fd, job_id, store_path);
  Held& h = held();
  std::lock_guard g(h.mu);
  h.gpus[{store_path, job_id}].push_back(std::move(gpu));
}

// Wakes every GpuReleaseWatch when the file at the GPU's path is no longer the one this process
// locked (removed, and maybe made again by a claimant that found the name bound): the release's
// own events went to a file nobody watches.
void touch_if_replaced(const HeldGpu& gpu) {
  if (!same_file(gpu.fd, gpu.path))
    ::utimensat(AT_FDCWD, gpu.path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

}  // namespace

bool lock_gpu(int index, int64_t job_id, const std::string& store_path) {
  auto gpu = take_lock(index);
  if (!gpu) return false;
  keep_lock(std::move(*gpu), job_id, store_path);
  return true;
}

std::optional<std::vector<int>> lock_gpus(const std::vector<int>& candidates, int count,
                                          int64_t job_id, const std::string& store_path,
                                          int leave_free) {
  std::vector<HeldGpu> taken;
  const int needed = count + std::max(0, leave_free);
  try {
    for (int index : candidates) {
      if (static_cast<int>(taken.size()) == needed) break;
      if (auto gpu = take_lock(index)) taken.push_back(std::move(*gpu));
    }
  } catch (...) {
    for (const HeldGpu& gpu : taken) let_go(gpu);
    throw;
  }
  if (static_cast<int>(taken.size()) < needed) {
    for (const HeldGpu& gpu : taken) let_go(gpu);  // unwritten: as it was before
    return std::nullopt;
  }
  while (static_cast<int>(taken.size()) > count) {  // the ones left free, as they were
    let_go(taken.back());
    taken.pop_back();
  }
  std::vector<int> out;
  for (HeldGpu& gpu : taken) {
    out.push_back(gpu.index);
    keep_lock(std::move(gpu), job_id, store_path);
  }
  return out;
}

GpuReleaseWatch::GpuReleaseWatch() {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) return;
  if (watch_folder()) return;
  ::close(fd_);
  fd_ = -1;
}

bool GpuReleaseWatch::watch_folder() {
  try {
    // IN_DELETE: a waiter left the queue (gpu_queue.h), so what it held back is free to claim.
    return ::inotify_add_watch(fd_, gpu_lock_dir().c_str(), IN_MODIFY | IN_ATTRIB | IN_DELETE) >= 0;
  } catch (const Fatal&) {
    return false;
  }
}

GpuReleaseWatch::~GpuReleaseWatch() {
  if (fd_ >= 0) ::close(fd_);
}

void GpuReleaseWatch::drain() {
  if (fd_ < 0) return;
  alignas(inotify_event) char buf[4096];
  bool unwatched = false;
  ssize_t n;
  while ((n = ::read(fd_, buf, sizeof buf)) > 0) {
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      unwatched |= (e->mask & IN_IGNORED) != 0;
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  // The folder was removed (its watch ends with IN_IGNORED): watch the one made in its place,
  // where claims and releases now write, or this waiter would only ever wake by its timer.
  if (unwatched) watch_folder();
}

void unlock_gpus(int64_t job_id, const std::string& store_path) {
  Held& h = held();
  std::lock_guard g(h.mu);
  auto it = h.gpus.find({store_path, job_id});
  if (it == h.gpus.end()) return;
  for (const HeldGpu& gpu : it->second) {
    // Emptied first so nobody reads a stale holder; the unlock happens either way. The name
    // freed before the unlock, and the times touched after both: a GpuReleaseWatch woken by
    // that finds the GPU free (the emptying wakes it too, but while the lock is still held;
    // closing unlocks only after the close's own event).
    if (::ftruncate(gpu.fd, 0) != 0) errno = 0;
    ::close(gpu.sock);
    ::flock(gpu.fd, LOCK_UN);
    ::futimens(gpu.fd, nullptr);
    touch_if_replaced(gpu);
    ::close(gpu.fd);
  }
  h.gpus.erase(it);
}

std::vector<int> locked_gpus(int64_t job_id, const std::string& store_path) {
  Held& h = held();
  std::lock_guard g(h.mu);
  std::vector<int> out;
  auto it = h.gpus.find({store_path, job_id});
  if (it != h.gpus.end())
    for (const HeldGpu& gpu : it->second) out.push_back(gpu.index);
  return out;
}

namespace {

// A GPU whose claim name is bound while its lock file is gone or unlocked: held by a claimant
// whose file was removed, which no file names any more.
std::optional<GpuHolder> held_without_file(int index) {
  if (!claim_bound(index)) return std::nullopt;
  GpuHolder holder;
  holder.lock_file_removed = true;
  return holder;
}

}  // namespace

std::optional<GpuHolder> gpu_holder(int index) {
  const std::string path = file_of(index);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return held_without_file(index);
  // A shared lock succeeds only when nobody holds the exclusive one: then the GPU is free,
  // unless the job of a holder that died still runs, or a holder whose file was removed still
  // has the claim name (looked at while this lock keeps claimants of this file out).
  const bool unlocked = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  GpuHolder holder = read_holder(fd);
  std::optional<GpuHolder> removed = unlocked ? held_without_file(index) : std::nullopt;
  ::close(fd);
  if (removed) return removed;
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
