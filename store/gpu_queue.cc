#include "store/gpu_queue.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/parse.h"
#include "store/gpu_locks.h"

namespace nodus::store {
namespace {

constexpr const char* kPrefix = "wait-";  // beside the gpuN.lock files

// What a waiter's file says: its GPU type and count.
struct Wanted {
  std::string type;
  int count = 0;
};

bool parse_wanted(const std::string& text, Wanted& out) {
  // "count N\ntype T\n"
  if (text.rfind("count ", 0) != 0) return false;
  auto nl = text.find('\n');
  if (nl == std::string::npos || text.compare(nl + 1, 5, "type ") != 0) return false;
  auto end = text.find('\n', nl + 6);
  if (end == std::string::npos) return false;
  int count = 0;
  for (size_t i = 6; i < nl; ++i) {
    if (text[i] < '0' || text[i] > '9' || count > 100'000'000) return false;
    count = count * 10 + (text[i] - '0');
  }
  if (count <= 0) return false;
  out.count = count;
  out.type = text.substr(nl + 6, end - nl - 6);
  return true;
}

}  // namespace

GpuWaiter::GpuWaiter(const std::string& type, int count) : type_(type), count_(count) {
  const std::string dir = gpu_lock_dir();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  char name[64];
  std::snprintf(name, sizeof name, "%s%020lld-%d", kPrefix, static_cast<long long>(ns), ::getpid());
  place_ = name;
  path_ = dir + "/" + place_;
  // Locked and written under a hidden name, then renamed: a reader never sees it unlocked.
  const std::string hidden = dir + "/." + place_;
  fd_ = ::open(hidden.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) throw Fatal("GPU queue: cannot create " + hidden + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX) != 0 || (write(), ::rename(hidden.c_str(), path_.c_str()) != 0)) {
    const int e = errno;
    ::unlink(hidden.c_str());
    ::close(fd_);
    throw Fatal("GPU queue: cannot join in " + dir + ": " + std::strerror(e));
  }
}

GpuWaiter::~GpuWaiter() {
  // Before the lock goes, so nobody takes it for a dead waiter's; the removal wakes every
  // GpuReleaseWatch, as a release does: a claim that left GPUs free for this waiter looks again.
  ::unlink(path_.c_str());
  ::close(fd_);
}

void GpuWaiter::want(const std::string& type, int count) {
  if (type == type_ && count == count_) return;
  type_ = type;
  count_ = count;
  write();
}

void GpuWaiter::write() {
  // The count zero-padded: while the type stays, an update is a write of the same length.
  char count[32];
  std::snprintf(count, sizeof count, "%010d", count_);
  const std::string text = std::string("count ") + count + "\ntype " + type_ + "\n";
  if (::pwrite(fd_, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
    if (::ftruncate(fd_, static_cast<off_t>(text.size())) == 0) return;
  throw Fatal("GPU queue: cannot write " + path_ + ": " + std::strerror(errno));
}

int gpus_to_leave(const std::string& type, int available, const GpuWaiter* mine) {
  const std::string dir = gpu_lock_dir();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d))
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) == 0 &&
        (!mine || e->d_name < mine->place()))
      names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  const std::string wanted_type = to_lower(type);
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;                       // it left
    if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {  // nobody holds it: its process died waiting
      ::unlink(path.c_str());
      ::close(fd);
      continue;
    }
    char buf[512];
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    ::close(fd);
    Wanted w;
    if (n <= 0 || !parse_wanted(std::string(buf, static_cast<size_t>(n)), w)) continue;
    if (to_lower(w.type) != wanted_type || w.count > available) continue;
    return w.count;  // the oldest that this claim could starve
  }
  return 0;
}

}  // namespace nodus::store
