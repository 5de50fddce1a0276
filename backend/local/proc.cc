#include "backend/local/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <sstream>

namespace nodus::backend::local {
namespace {

// Reads a whole small /proc file; nullopt if it cannot be opened.
std::optional<std::string> read_file(const std::string& path) {
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

bool parse_pid(const char* s, pid_t* out) {
  if (*s < '0' || *s > '9') return false;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (*end != '\0' || v <= 0 || v > INT_MAX) return false;
  *out = static_cast<pid_t>(v);
  return true;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat st;
  st.pid = static_cast<pid_t>(std::atol(text.c_str()));
  st.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  long ppid = 0, pgrp = 0, session = 0;
  if (!(rest >> st.state >> ppid >> pgrp >> session)) return std::nullopt;
  st.ppid = static_cast<pid_t>(ppid);
  st.pgrp = static_cast<pid_t>(pgrp);
  st.session = static_cast<pid_t>(session);
  return st;
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text || text->empty()) return std::nullopt;
  return parse_proc_stat(*text);
}

std::vector<ProcStat> scan_processes() {
  std::vector<ProcStat> out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc"), ::closedir);
  if (!dir) return out;
  while (const dirent* e = ::readdir(dir.get())) {
    pid_t pid = 0;
    if (!parse_pid(e->d_name, &pid)) continue;
    // The process may exit between readdir and open: it is then simply not listed.
    if (auto st = read_proc_stat(pid)) out.push_back(std::move(*st));
  }
  return out;
}

std::optional<std::string> read_proc_env(pid_t pid, const std::string& name) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/environ");
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

}  // namespace nodus::backend::local
