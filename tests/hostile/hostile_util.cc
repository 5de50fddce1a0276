#include "hostile/hostile_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

extern char** environ;

namespace nodus::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (*end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return out;
}

bool zombie(pid_t pid) {
  std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto close = s.rfind(')');
  return s.empty() || (close != std::string::npos && close + 2 < s.size() && s[close + 2] == 'Z');
}

}  // namespace

RunResult run_command(const NodusHome& home, const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> all;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) all[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const char* drop : {"NODUS_LOCAL_GPUS", "NODUS_PRICES", "NODUS_BACKEND", "NO_COLOR"})
    all.erase(drop);
  for (const auto& [k, v] : home.env(extra)) all[k] = v;
  std::vector<std::string> envs;
  for (const auto& [k, v] : all) envs.push_back(k + "=" + v);
  std::vector<char*> envp, argp;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  const std::string out_path = home.file("command.out"), err_path = home.file("command.err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  // Its own process group, as from a shell: timeout(1) signals its group, not ours.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  double t0 = now_seconds();
  pid_t pid = -1;
  RunResult r;
  if (posix_spawnp(&pid, argp[0], &fa, &attr, argp.data(), envp.data()) != 0) return r;
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.seconds = now_seconds() - t0;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  for (pid_t pid : all_pids()) {
    if (pid == self) continue;
    std::string cmdline = slurp("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(marker) != std::string::npos && !zombie(pid)) out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> survivors_after(const std::string& marker, std::chrono::milliseconds limit) {
  const double until = now_seconds() + limit.count() / 1000.0;
  for (;;) {
    auto left = processes_with(marker);
    if (left.empty() || now_seconds() > until) return left;
    poll(nullptr, 0, 20);
  }
}

bool wait_for_processes(const std::string& marker, size_t count, std::chrono::milliseconds limit) {
  const double until = now_seconds() + limit.count() / 1000.0;
  while (now_seconds() < until) {
    if (processes_with(marker).size() >= count) return true;
    poll(nullptr, 0, 20);
  }
  return false;
}

bool wait_for_sleeps(const std::string& marker, size_t count, std::chrono::milliseconds limit) {
  const double until = now_seconds() + limit.count() / 1000.0;
  while (now_seconds() < until) {
    size_t found = 0;
    for (pid_t pid : processes_with(marker))
      if (slurp("/proc/" + std::to_string(pid) + "/comm") == "sleep\n") ++found;
    if (found >= count) return true;
    poll(nullptr, 0, 20);
  }
  return false;
}

std::string job_cgroup(const nlohmann::json& job) {
  const std::string note = job.value("note", "");
  const std::string key = "contained by cgroup ";
  auto at = note.find(key);
  if (at == std::string::npos) return "";
  auto end = note.find(';', at);
  return note.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
}

bool cgroup_empty(const std::string& path) {
  std::ifstream events(path + "/cgroup.events");
  if (!events) return true;
  std::string text((std::istreambuf_iterator<char>(events)), std::istreambuf_iterator<char>());
  return text.find("populated 0") != std::string::npos;
}

namespace {

// The `nodus __supervise` processes of home (sentinel: false) or their sentinels (true).
std::vector<pid_t> supervise_or_sentinel(const NodusHome& home, bool sentinel) {
  std::vector<pid_t> found;
  const std::string needle = "NODUS_HOME=" + home.path();
  for (pid_t pid : all_pids()) {
    std::string cmdline = slurp("/proc/" + std::to_string(pid) + "/cmdline");
    // Its sentinel is `nodus __sentinel ...` (backend/local/sentinel.h), or, where that could
    // not be spawned, a fork of it with the same command line: told apart by its name.
    if (cmdline.find("__supervise") == std::string::npos &&
        cmdline.find("__sentinel") == std::string::npos)
      continue;
    bool is_sentinel =
        slurp("/proc/" + std::to_string(pid) + "/comm").rfind("nodus-sentinel", 0) == 0;
    if (is_sentinel != sentinel || zombie(pid)) continue;
    std::string env = slurp("/proc/" + std::to_string(pid) + "/environ");
    size_t pos = 0;
    while (pos < env.size()) {
      size_t end = env.find('\0', pos);
      if (end == std::string::npos) end = env.size();
      if (env.compare(pos, end - pos, needle) == 0) {
        found.push_back(pid);
        break;
      }
      pos = end + 1;
    }
  }
  return found;
}

pid_t first_or_none(const std::vector<pid_t>& pids) { return pids.empty() ? -1 : pids.front(); }

}  // namespace

pid_t supervise_process(const NodusHome& home) {
  return first_or_none(supervise_or_sentinel(home, false));
}

pid_t sentinel_process(const NodusHome& home) {
  return first_or_none(supervise_or_sentinel(home, true));
}

std::vector<pid_t> supervise_processes(const NodusHome& home) {
  return supervise_or_sentinel(home, false);
}

std::vector<pid_t> sentinel_processes(const NodusHome& home) {
  return supervise_or_sentinel(home, true);
}

bool wait_gone(pid_t pid, std::chrono::milliseconds limit) {
  const double until = now_seconds() + limit.count() / 1000.0;
  for (;;) {
    if (::kill(pid, 0) != 0 || zombie(pid)) return true;
    if (now_seconds() > until) return false;
    poll(nullptr, 0, 10);
  }
}

void kill_all(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) kill(p, SIGKILL);
}

std::string unique_marker(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + std::to_string(getpid()) + std::to_string(100 + counter++);
}

bool cgroups_available() {
  NodusHome home;
  auto r = home.run({"run", "--", "true"});
  if (r.code != 0) return false;
  return !job_cgroup(show_json(home, "1")).empty();
}

bool can_mount() {
  if (geteuid() != 0) return false;
  return std::system("unshare -m sh -c 'mount -t tmpfs none /mnt' >/dev/null 2>&1") == 0;
}

}  // namespace nodus::testing
