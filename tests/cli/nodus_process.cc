#include "cli/nodus_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace nodus::testing {
namespace {

std::vector<std::string> make_env(const std::map<std::string, std::string>& vars) {
  std::map<std::string, std::string> all;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) all[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const char* drop : {"NODUS_LOCAL_GPUS", "NODUS_PRICES", "NODUS_BACKEND", "NO_COLOR",
                           "NODUS_PRICES_ONLY", "NODUS_LOCAL_USD_PER_HOUR"})
    all.erase(drop);
  for (const auto& [k, v] : vars) all[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : all) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

NodusHome::NodusHome() {
  char tmpl[] = "/tmp/nodus-cli-test-XXXXXX";
  path_ = mkdtemp(tmpl);
}

NodusHome::~NodusHome() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::map<std::string, std::string> NodusHome::env(
    const std::map<std::string, std::string>& extra) const {
  std::map<std::string, std::string> e = extra;
  e["NODUS_HOME"] = path_;
  return e;
}

RunResult NodusHome::run(const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& extra) const {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) std::abort();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<std::string> argv = {NODUS_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  auto envs = make_env(env(extra));
  auto argp = pointers(argv);
  auto envp = pointers(envs);
  double t0 = now_seconds();
  pid_t pid = -1;
  if (posix_spawn(&pid, NODUS_BIN, &fa, nullptr, argp.data(), envp.data()) != 0) std::abort();
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  RunResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.seconds = now_seconds() - t0;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

pid_t NodusHome::start(const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& extra,
                       const std::string& out_file) const {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::string out = out_file.empty() ? path_ + "/started.out" : out_file;
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, (out + ".err").c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0600);
  std::vector<std::string> argv = {NODUS_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  auto envs = make_env(env(extra));
  auto argp = pointers(argv);
  auto envp = pointers(envs);
  pid_t pid = -1;
  if (posix_spawn(&pid, NODUS_BIN, &fa, nullptr, argp.data(), envp.data()) != 0) std::abort();
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  double until = now_seconds() + timeout.count() / 1000.0;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (now_seconds() > until) return -1;
    poll(nullptr, 0, 10);
  }
}

bool pid_alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  // A zombie counts as gone.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  return close == std::string::npos || s.size() < close + 3 || s[close + 2] != 'Z';
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace nodus::testing
