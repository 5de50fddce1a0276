#include "core/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <memory>
#include <sstream>
#include <unordered_map>

namespace nodus {
namespace {

template <typename T>
bool to_number(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_pid(const char* s, pid_t* out) {
  if (*s < '0' || *s > '9') return false;
  long v = 0;
  if (!to_number(std::string_view(s), &v) || v <= 0 || v > INT_MAX) return false;
  *out = static_cast<pid_t>(v);
  return true;
}

// Mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        if (i + k >= s.size() || s[i + k] < '0' || s[i + k] > '7') {
          octal = false;
          break;
        }
        v = v * 8 + (s[i + k] - '0');
      }
      if (octal) {
        out += static_cast<char>(v);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  ProcStat st;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (!to_number(pid_text, &st.pid)) return std::nullopt;
  st.comm = std::string(text.substr(open + 1, close - open - 1));

  std::vector<std::string_view> f;  // f[0] is field 3
  std::string_view rest = text.substr(close + 1);
  size_t i = 0;
  while (i < rest.size() && f.size() < 22) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    size_t start = i;
    while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
    if (i > start) f.push_back(rest.substr(start, i - start));
  }
  auto field = [&](int n) { return f[static_cast<size_t>(n - 3)]; };
  if (f.size() < 22 || field(3).size() != 1) return std::nullopt;
  st.state = field(3)[0];
  if (!to_number(field(4), &st.ppid) || !to_number(field(5), &st.pgrp) ||
      !to_number(field(6), &st.session) || !to_number(field(14), &st.utime) ||
      !to_number(field(15), &st.stime) || !to_number(field(22), &st.starttime) ||
      !to_number(field(24), &st.rss_pages))
    return std::nullopt;
  return st;
}

std::optional<std::string> read_small_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

std::optional<std::string> read_proc_file(pid_t pid, const char* name) {
  return read_small_file("/proc/" + std::to_string(pid) + "/" + name);
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  auto text = read_proc_file(pid, "stat");
  if (!text || text->empty()) return std::nullopt;
  return parse_proc_stat(*text);
}

std::vector<pid_t> list_pids() {
  std::vector<pid_t> out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc"), ::closedir);
  if (!dir) return out;
  while (const dirent* e = ::readdir(dir.get())) {
    pid_t pid = 0;
    if (parse_pid(e->d_name, &pid)) out.push_back(pid);
  }
  return out;
}

std::vector<bool> tree_members(const std::vector<ProcStat>& procs, const TreeSeeds& seeds) {
  std::unordered_multimap<pid_t, size_t> children;  // ppid -> index in procs
  for (size_t i = 0; i < procs.size(); ++i) children.emplace(procs[i].ppid, i);
  std::vector<bool> member(procs.size(), false);
  std::vector<size_t> frontier;
  auto take = [&](size_t i) {
    if (member[i] || (seeds.never != 0 && procs[i].pid == seeds.never)) return;
    member[i] = true;
    frontier.push_back(i);
  };
  for (size_t i = 0; i < procs.size(); ++i) {
    const ProcStat& p = procs[i];
    if (std::find(seeds.roots.begin(), seeds.roots.end(), p.pid) != seeds.roots.end() ||
        (seeds.session != 0 && p.session == seeds.session) ||
        (seeds.pgrp != 0 && p.pgrp == seeds.pgrp))
      take(i);
  }
  while (!frontier.empty()) {
    const pid_t parent = procs[frontier.back()].pid;
    frontier.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) take(it->second);
  }
  return member;
}

std::vector<ProcStat> scan_processes() {
  std::vector<ProcStat> out;
  for (pid_t pid : list_pids())
    if (auto st = read_proc_stat(pid)) out.push_back(std::move(*st));
  return out;
}

std::optional<std::string> read_proc_env(pid_t pid, const std::string& name) {
  auto text = read_proc_file(pid, "environ");
  if (!text) return std::nullopt;
  const std::string prefix = name + "=";
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\0', pos);
    if (end == std::string::npos) end = text->size();
    if (text->compare(pos, prefix.size(), prefix) == 0)
      return text->substr(pos + prefix.size(), end - pos - prefix.size());
    pos = end + 1;
  }
  return std::nullopt;
}

std::vector<std::string> read_proc_fd_targets(pid_t pid) {
  std::vector<std::string> out;
  const std::string dir_path = "/proc/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(dir_path.c_str()), ::closedir);
  if (!dir) return out;
  char target[PATH_MAX];
  while (const dirent* e = ::readdir(dir.get())) {
    if (e->d_name[0] == '.') continue;
    const std::string link = dir_path + "/" + e->d_name;
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0) out.emplace_back(target, static_cast<size_t>(n));
  }
  return out;
}

bool process_gone(pid_t pid) {
  auto st = read_proc_stat(pid);
  return !st || st->zombie();
}

bool process_stopped(pid_t pid) {
  auto st = read_proc_stat(pid);
  if (!st || st->zombie()) return false;
  if (st->state == 'T' || st->state == 't') return true;
  auto dir = process_cgroup_dir(pid);
  auto events = dir ? read_small_file(*dir + "/cgroup.events") : std::nullopt;
  return events &&
         (events->find("\nfrozen 1") != std::string::npos || events->rfind("frozen 1", 0) == 0);
}

std::vector<CgroupMount> cgroup_mounts(const std::string& mountinfo) {
  // "id parent maj:min root mountpoint options [tags] - fstype source superoptions"
  std::vector<CgroupMount> out;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string field, mount_point;
    for (int i = 0; i < 5 && head >> field; ++i)
      if (i == 4) mount_point = field;
    if (!mount_point.empty()) out.push_back({fstype, unescape(mount_point)});
  }
  return out;
}

std::optional<std::string> cgroup2_mount(const std::string& mountinfo) {
  for (const auto& m : cgroup_mounts(mountinfo))
    if (m.type == "cgroup2") return m.mount_point;
  return std::nullopt;
}

std::optional<std::string> unified_path(const std::string& proc_cgroup) {
  std::istringstream in(proc_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    // A process in a cgroup that was removed shows " (deleted)".
    if (path.empty() || path[0] != '/' || path.find(" (deleted)") != std::string::npos)
      return std::nullopt;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
  }
  return std::nullopt;
}

std::optional<std::string> process_cgroup_dir(pid_t pid) {
  static const std::optional<std::string> mount = [] {
    auto mountinfo = read_small_file("/proc/self/mountinfo");
    return mountinfo ? cgroup2_mount(*mountinfo) : std::nullopt;
  }();
  if (!mount) return std::nullopt;
  auto text = pid == 0 ? read_small_file("/proc/self/cgroup") : read_proc_file(pid, "cgroup");
  auto path = text ? unified_path(*text) : std::nullopt;
  if (!path) return std::nullopt;
  return *path == "/" ? *mount : *mount + *path;
}

}  // namespace nodus
