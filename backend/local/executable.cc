// The parts of launch.h that need no fork: finding the executable and building the environment.

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "backend/local/launch.h"

extern char** environ;

namespace nodus::backend::local {
namespace {

namespace fs = std::filesystem;

// execvp's search path when PATH is unset.
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// `p` made absolute against `base` (itself taken against nodus's working directory). Should
// the working directory be gone, the path stays relative and the checks below fail on it.
std::string absolute_against(const std::string& p, const std::string& base) {
  fs::path path(p);
  if (path.is_absolute()) return path.lexically_normal().string();
  std::error_code ec;
  fs::path b = base.empty() ? fs::current_path(ec) : fs::absolute(fs::path(base), ec);
  return (b / path).lexically_normal().string();
}

enum class Check { kRunnable, kMissing, kDirectory, kNotExecutable };

Check check(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Check::kMissing;
  if (S_ISDIR(st.st_mode)) return Check::kDirectory;
  if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) return Check::kNotExecutable;
  return Check::kRunnable;
}

}  // namespace

Result<std::string> resolve_executable(const std::string& command, const std::string& path_env,
                                       const std::string& workdir) {
  if (command.empty()) return Error::permanent("command not found: ''", 127);
  if (command.find('/') != std::string::npos) {
    const std::string path = absolute_against(command, workdir);
    switch (check(path)) {
      case Check::kRunnable:
        return path;
      case Check::kMissing:
        return Error::permanent("command not found: '" + command + "' (no such file)", 127);
      case Check::kDirectory:
        return Error::permanent("cannot run '" + command + "': is a directory", 126);
      case Check::kNotExecutable:
        return Error::permanent("cannot run '" + command + "': permission denied", 126);
    }
  }
  const std::string search = path_env.empty() ? kDefaultPath : path_env;
  std::string not_executable;  // the first match that exists but cannot be run
  size_t start = 0;
  while (start <= search.size()) {
    size_t end = search.find(':', start);
    if (end == std::string::npos) end = search.size();
    std::string dir = search.substr(start, end - start);
    start = end + 1;
    const std::string path = absolute_against((dir.empty() ? "." : dir) + "/" + command, workdir);
    Check c = check(path);
    if (c == Check::kRunnable) return path;
    if (c == Check::kNotExecutable && not_executable.empty()) not_executable = path;
  }
  if (!not_executable.empty())
    return Error::permanent(
        "cannot run '" + command + "': permission denied (" + not_executable + ")", 126);
  return Error::permanent("command not found: '" + command + "'", 127);
}

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    std::string name(entry.substr(0, eq));
    if (overrides.count(name) == 0) env.emplace_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

std::string env_value(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& entry : env)
    if (entry.size() > name.size() && entry[name.size()] == '=' &&
        std::string_view(entry).substr(0, name.size()) == name)
      return entry.substr(name.size() + 1);
  return "";
}

}  // namespace nodus::backend::local
