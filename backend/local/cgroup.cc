#include "backend/local/cgroup.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "core/config.h"
#include "core/proc.h"

namespace nodus::backend::local {
namespace {

using Clock = std::chrono::steady_clock;

bool write_text(const std::string& path, const char* text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::write(fd, text, std::strlen(text));
  ::close(fd);
  return n == static_cast<ssize_t>(std::strlen(text));
}

std::vector<pid_t> parse_pids(const std::string& text) {
  std::vector<pid_t> out;
  std::istringstream in(text);
  long v;
  while (in >> v)
    if (v > 0) out.push_back(static_cast<pid_t>(v));
  return out;
}

// A candidate folder for nodus's cgroups is usable when mkdir works there and the kernel has
// cgroup.kill (the folder we made has one).
bool usable(const std::string& dir, std::string* why) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *why = "mkdir " + dir + ": " + std::strerror(errno);
    return false;
  }
  if (::access((dir + "/cgroup.kill").c_str(), W_OK) != 0) {
    *why = dir + "/cgroup.kill: " + std::strerror(errno) + " (needs Linux >= 5.14)";
    return false;
  }
  return true;
}

struct ParentCache {
  std::once_flag once;
  std::optional<std::string> parent;
  std::string why;
};

ParentCache& cache() {
  static ParentCache c;
  return c;
}

void find_parent(ParentCache& c) {
  if (config_get("cgroup") == "off") {
    c.why = "cgroups disabled (NODUS_CGROUP=off)";
    return;
  }
  auto mountinfo = read_small_file("/proc/self/mountinfo");
  auto mount = mountinfo ? cgroup2_mount(*mountinfo) : std::nullopt;
  if (!mount) {
    c.why = "no cgroup2 file system mounted";
    return;
  }
  auto self = read_small_file("/proc/self/cgroup");
  auto own = self ? unified_path(*self) : std::nullopt;
  std::vector<std::string> candidates;
  if (own && *own != "/") candidates.push_back(*mount + *own + "/nodus");
  candidates.push_back(*mount + "/nodus");
  std::string why;
  for (const std::string& dir : candidates) {
    if (usable(dir, &why)) {
      c.parent = dir;
      return;
    }
    c.why += (c.why.empty() ? "" : "; ") + why;
  }
}

}  // namespace

std::optional<std::string> cgroup_parent(std::string* why) {
  ParentCache& c = cache();
  std::call_once(c.once, [&c] { find_parent(c); });
  if (!c.parent && why) *why = c.why;
  return c.parent;
}

Result<JobCgroup> JobCgroup::create(const std::string& parent, const std::string& name) {
  JobCgroup g;
  const std::string path = parent + "/" + name;
  // EEXIST: an empty leftover of an earlier supervisor with our pid; rmdir fails if it is not.
  if (::mkdir(path.c_str(), 0755) != 0 &&
      (errno != EEXIST || ::rmdir(path.c_str()) != 0 || ::mkdir(path.c_str(), 0755) != 0))
    return Error::permanent("mkdir " + path + ": " + std::strerror(errno));
  g.path_ = path;
  g.procs_fd_ = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (g.procs_fd_ < 0) {
    const int e = errno;
    ::rmdir(path.c_str());
    g.path_.clear();
    return Error::permanent("open " + path + "/cgroup.procs: " + std::strerror(e));
  }
  return g;
}

Result<void> JobCgroup::restrict_cpus(const std::string& cpu_list) const {
  const std::string file = path_ + "/cpuset.cpus";
  if (::access(file.c_str(), W_OK) != 0) {
    const std::string parent = path_.substr(0, path_.rfind('/'));
    auto controllers = read_small_file(parent + "/cgroup.controllers");
    if (!controllers || (" " + *controllers).find(" cpuset") == std::string::npos)
      return Error::permanent("the cpuset controller is not available in " + parent);
    if (!write_text(parent + "/cgroup.subtree_control", "+cpuset"))
      return Error::permanent("cannot enable cpuset in " + parent +
                              "/cgroup.subtree_control: " + std::strerror(errno));
  }
  if (!write_text(file, cpu_list.c_str()))
    return Error::permanent("cannot write " + file + ": " + std::strerror(errno));
  return {};
}

JobCgroup::JobCgroup(JobCgroup&& o) noexcept : path_(std::move(o.path_)), procs_fd_(o.procs_fd_) {
  o.path_.clear();
  o.procs_fd_ = -1;
}

JobCgroup& JobCgroup::operator=(JobCgroup&& o) noexcept {
  if (this != &o) {
    if (procs_fd_ >= 0) ::close(procs_fd_);
    path_ = std::move(o.path_);
    procs_fd_ = o.procs_fd_;
    o.path_.clear();
    o.procs_fd_ = -1;
  }
  return *this;
}

JobCgroup::~JobCgroup() {
  if (procs_fd_ >= 0) ::close(procs_fd_);
}

std::vector<pid_t> JobCgroup::members() const {
  auto text = read_small_file(path_ + "/cgroup.procs");
  return text ? parse_pids(*text) : std::vector<pid_t>{};
}

bool JobCgroup::populated() const { return cgroup_populated_path(path_); }

int JobCgroup::signal(int sig) const { return cgroup_signal_path(path_, sig); }

Result<void> JobCgroup::kill(std::chrono::milliseconds limit) const {
  if (!cgroup_kill_path(path_) && cgroup_populated_path(path_))
    return Error::retryable("cgroup.kill of " + path_ + " failed: " + std::strerror(errno));
  if (cgroup_wait_empty_path(path_, limit)) return {};
  std::string names;
  for (pid_t p : members()) names += (names.empty() ? "" : ", ") + std::to_string(p);
  return Error::retryable("cgroup " + path_ + " still holds processes " +
                          std::to_string(limit.count()) + " ms after cgroup.kill: " + names);
}

CgroupUsage JobCgroup::usage() const {
  CgroupUsage u;
  if (auto text = read_small_file(path_ + "/cpu.stat")) {
    std::istringstream in(*text);
    std::string key;
    uint64_t value;
    while (in >> key >> value)
      if (key == "usage_usec") u.cpu_seconds = static_cast<double>(value) / 1e6;
  }
  if (auto text = read_small_file(path_ + "/memory.peak")) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(text->c_str(), &end, 10);
    if (end != text->c_str()) u.memory_peak = v;
  }
  return u;
}

std::vector<std::string> cgroup_and_below(const std::string& path) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path().string());
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  dirs.push_back(path);
  return dirs;
}

Result<void> JobCgroup::remove() {
  if (path_.empty()) return {};
  if (procs_fd_ >= 0) ::close(procs_fd_);
  procs_fd_ = -1;
  if (int e = cgroup_remove_path(path_); e != 0)
    return Error::retryable("rmdir " + path_ + ": " + std::strerror(e));
  path_.clear();
  return {};
}

std::string cgroup_from_note(const std::string& note) {
  const std::string key = kContainedByCgroup;
  auto at = note.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  auto end = note.find("; ", at);  // notes are joined with "; " (add_note)
  return note.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

bool cgroup_kill_path(const std::string& path) { return write_text(path + "/cgroup.kill", "1"); }

bool cgroup_populated_path(const std::string& path) {
  auto text = read_small_file(path + "/cgroup.events");
  if (!text) return ::access(path.c_str(), F_OK) == 0;  // gone: nothing in it
  return text->find("populated 0") == std::string::npos;
}

bool cgroup_wait_empty_path(const std::string& path, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  // cgroup.events signals a change with POLLPRI; a short cap on each wait covers a missed one.
  int fd = ::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
  bool empty = false;
  for (;;) {
    if (!cgroup_populated_path(path)) {
      empty = true;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    cgroup_kill_path(path);  // members that joined by fork after the last write
    if (fd >= 0) {
      char buf[256];
      ::lseek(fd, 0, SEEK_SET);
      ssize_t ignored = ::read(fd, buf, sizeof buf);  // re-arms the notification
      (void)ignored;
      pollfd p{fd, POLLPRI, 0};
      ::poll(&p, 1, 5);
    } else {
      ::poll(nullptr, 0, 2);
    }
  }
  if (fd >= 0) ::close(fd);
  return empty;
}

int cgroup_remove_path(const std::string& path) {
  // The cgroups a job made below its own go first (a job run as root may make them): empty
  // once the job's are, as cgroup.kill reaches them too.
  for (const std::string& dir : cgroup_and_below(path))
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT && dir == path) return errno;
  return 0;
}

int cgroup_signal_path(const std::string& path, int sig) {
  int count = 0;
  for (const std::string& dir : cgroup_and_below(path)) {
    auto text = read_small_file(dir + "/cgroup.procs");
    if (!text) continue;
    for (pid_t p : parse_pids(*text))
      if (::kill(p, sig) == 0) ++count;
  }
  return count;
}

}  // namespace nodus::backend::local
