#include "chromium.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace nodus::report::testing {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<std::string> on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> find_chromium() {
  if (const char* env = std::getenv("NODUS_CHROMIUM"); env && *env) return std::string(env);
  for (const char* name : {"chromium", "chromium-browser"})
    if (auto found = on_path(name)) return found;
  return std::nullopt;
}

BrowserRun run_chromium(const std::string& binary, const std::string& html_path,
                        const std::vector<std::string>& extra_args, const std::string& work_dir,
                        std::chrono::seconds timeout) {
  static int runs = 0;
  const fs::path dir = fs::path(work_dir) / ("chromium-" + std::to_string(++runs));
  fs::create_directories(dir / "profile");
  const fs::path out_path = dir / "stdout", err_path = dir / "stderr";

  std::vector<std::string> args = {binary,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--no-first-run",
                                   "--disable-quic",
                                   "--user-data-dir=" + (dir / "profile").string()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  args.push_back("file://" + fs::absolute(html_path).string());

  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  BrowserRun run;
  if (pid < 0) return run;
  setpgid(pid, pid);  // also here, so the group exists before we might kill it

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(-pid, SIGKILL);  // renderers and helpers left behind by the browser, if any
  if (!run.timed_out && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  run.out = slurp(out_path);
  run.err = slurp(err_path);
  return run;
}

std::vector<std::string> page_console_lines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos ||
        line.find("Content Security Policy") != std::string::npos ||
        line.find("Refused to") != std::string::npos)
      out.push_back(line);
  }
  return out;
}

}  // namespace nodus::report::testing
