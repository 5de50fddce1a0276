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
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/job.h"
#include "core/parse.h"
#include "store/gpu_locks.h"

namespace nodus::store {
namespace {

constexpr const char* kPrefix = "wait-";  // beside the gpuN.lock files

// What a waiter's file says: "count N\ntype T\nfor W\n" (no "for" line: nothing said).
bool parse_wanted(const std::string& text, QueuedClaim& out) {
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
  if (text.compare(end + 1, 4, "for ") == 0) {
    auto who_end = text.find('\n', end + 5);
    if (who_end != std::string::npos) out.who = text.substr(end + 5, who_end - end - 5);
  }
  return true;
}

// "wait-<20 digits of ns>-<pid>": when it began to wait, and its process.
void parse_place(const std::string& name, QueuedClaim& out) {
  const size_t at = std::strlen(kPrefix);
  auto dash = name.find('-', at);
  if (dash == std::string::npos) return;
  out.since = std::strtod(name.substr(at, dash - at).c_str(), nullptr) / 1e9;
  out.pid = std::strtoll(name.c_str() + dash + 1, nullptr, 10);
}

// The live waiters' files (names) in queue order, those before `mine` only when given.
std::vector<QueuedClaim> live_waiters(const GpuWaiter* mine) {
  const std::string dir = gpu_lock_dir();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return {};
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d))
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) == 0 &&
        (!mine || e->d_name < mine->place()))
      names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<QueuedClaim> out;
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;                       // it left
    if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {  // nobody holds it: its process died waiting
      ::unlink(path.c_str());
      ::close(fd);
      continue;
    }
    char buf[4096];
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    ::close(fd);
    QueuedClaim w;
    if (n <= 0 || !parse_wanted(std::string(buf, static_cast<size_t>(n)), w)) continue;
    parse_place(name, w);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

GpuWaiter::GpuWaiter(const std::string& type, int count, const std::string& who)
    : type_(type), count_(count), who_(who) {
  for (char& c : who_)
    if (c == '\n') c = ' ';  // one line in the file
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
  const std::string text =
      std::string("count ") + count + "\ntype " + type_ + "\nfor " + who_ + "\n";
  if (::pwrite(fd_, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
    if (::ftruncate(fd_, static_cast<off_t>(text.size())) == 0) return;
  throw Fatal("GPU queue: cannot write " + path_ + ": " + std::strerror(errno));
}

std::vector<QueuedClaim> gpu_queue() { return live_waiters(nullptr); }

std::optional<QueuedClaim> first_in_line(const std::string& type, int available,
                                         const GpuWaiter* mine) {
  const std::string wanted_type = to_lower(type);
  const double held_from = unix_now() - std::chrono::duration<double>(gpu_queue_after()).count();
  for (QueuedClaim& w : live_waiters(mine))
    if (to_lower(w.type) == wanted_type && w.count <= available && w.since <= held_from)
      return std::move(w);
  return std::nullopt;
}

int gpus_to_leave(const std::string& type, int available, const GpuWaiter* mine) {
  auto first = first_in_line(type, available, mine);
  return first ? first->count : 0;
}

}  // namespace nodus::store
