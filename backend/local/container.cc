#include "backend/local/container.h"

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <tuple>

#include "backend/local/cgroup.h"
#include "backend/local/launch.h"
#include "backend/local/run_capture.h"
#include "core/proc.h"
#include "core/strings.h"

namespace nodus::backend::local {
namespace {

// Why `<engine> info` failed, in the engine's own words: the first line of its stderr (docker
// prints its client section on stdout even when the daemon is unreachable).
std::string info_failure(const Captured& c) {
  std::string line = first_line(c.err);
  if (line.empty()) line = first_line(c.out);
  if (line.empty()) line = "`info` exited with " + std::to_string(c.exit_code);
  return line;
}

// "nofile=S:H" from this process's limit, at most `most`; -1 is the engines' word for
// unlimited.
std::string ulimit_arg(const char* name, int resource, rlim_t most) {
  rlimit rl{};
  if (::getrlimit(resource, &rl) != 0) return "";
  rl.rlim_cur = std::min(rl.rlim_cur, most);
  rl.rlim_max = std::min(rl.rlim_max, most);
  auto v = [](rlim_t x) { return x == RLIM_INFINITY ? std::string("-1") : std::to_string(x); };
  return std::string(name) + "=" + v(rl.rlim_cur) + ":" + v(rl.rlim_max);
}

}  // namespace

Result<ContainerEngine> find_container_engine(const std::string& image,
                                              const std::vector<std::string>& env,
                                              std::chrono::milliseconds timeout) {
  std::vector<std::string> broken, missing;
  for (const char* name : {"podman", "docker"}) {
    auto path = resolve_executable(name, env_value(env, "PATH"), "");
    if (!path.ok()) {
      missing.push_back(std::string(name) + " not found");
      continue;
    }
    auto info = run_capture({*path, "info"}, env, timeout);
    if (info.ok() && info->exit_code == 0 && !info->timed_out) return ContainerEngine{name, *path};
    std::string why;
    if (!info.ok())
      why = info.error().message;
    else if (info->timed_out)
      why = "`" + std::string(name) + " info` did not answer within " +
            std::to_string(timeout.count()) + " ms";
    else
      why = info_failure(*info);
    broken.push_back(std::string(name) + " is installed but its engine is not reachable (" + why +
                     ")");
  }
  broken.insert(broken.end(), missing.begin(), missing.end());
  return Error::permanent(
      "--image " + image + ": needs a working podman or docker: " + join(broken, "; "), 125);
}

Result<void> check_image(const ContainerEngine& engine, const std::string& image,
                         const std::vector<std::string>& env, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {engine.path, "image", "exists", "--", image};
  if (engine.name == "docker")
    argv = {engine.path, "image", "inspect", "--format", "x", "--", image};
  auto r = run_capture(argv, env, timeout);
  if (r.ok() && !r->timed_out && r->exit_code == 0) return {};
  std::string why;
  if (!r.ok())
    why = r.error().message;
  else if (r->timed_out)
    why = "`" + engine.name + " image` did not answer within " + std::to_string(timeout.count()) +
          " ms";
  else if (engine.name == "podman" && r->exit_code == 1)
    why = "";  // `image exists` says "no" by its exit code alone
  else
    why = info_failure(*r);
  if (!why.empty())
    return Error::permanent(
        "--image " + image + ": cannot ask " + engine.name + " for the image: " + why, 125);
  return Error::permanent("--image " + image + ": no such image in " + engine.name +
                              "'s local store; get it first (" + engine.name + " pull " + image +
                              ", or " + engine.name +
                              " load/import): nodus does not pull during a billed run",
                          125);
}

Result<void> check_runtime(const ContainerEngine& engine, const std::string& image,
                           const std::vector<std::string>& env, std::chrono::milliseconds timeout) {
  if (engine.name != "podman") return {};
  auto r = run_capture(
      {engine.path, "info", "--format", "{{.Host.OCIRuntime.Name}} {{.Host.CgroupsVersion}}"}, env,
      timeout);
  if (!r.ok() || r->timed_out || r->exit_code != 0) return {};
  if (trim(r->out) != "crun v1") return {};
  auto mountinfo = read_small_file("/proc/self/mountinfo");
  auto mount = mountinfo ? cgroup2_mount(*mountinfo) : std::nullopt;
  if (!mount) return {};  // pure cgroup v1: crun runs there
  return Error::permanent("--image " + image +
                              ": podman's OCI runtime is crun, which refuses this host's hybrid "
                              "cgroups (v1, and cgroup2 at " +
                              *mount +
                              "): \"cgroups in hybrid mode not supported\"; install runc and set "
                              "runtime = \"runc\" under [engine] in "
                              "/etc/containers/containers.conf (docs/containers.md)",
                          125);
}

std::string container_cgroup_parent(const std::string& job_cgroup_path) {
  if (job_cgroup_path.empty()) return "";
  auto mountinfo = read_small_file("/proc/self/mountinfo");
  auto mount = mountinfo ? cgroup2_mount(*mountinfo) : std::nullopt;
  if (!mount || job_cgroup_path.rfind(*mount + "/", 0) != 0) return "";
  auto controllers = read_small_file(job_cgroup_path + "/cgroup.controllers");
  if (!controllers || !trim(*controllers).empty()) return "";
  return job_cgroup_path.substr(mount->size());
}

std::vector<std::string> container_run_argv(const ContainerEngine& engine,
                                            const std::string& container_name, const JobRecord& job,
                                            const std::map<std::string, std::string>& job_env,
                                            const std::string& workdir,
                                            const std::string& cgroup_parent,
                                            const std::vector<int>& cpus) {
  std::vector<std::string> argv = {engine.path};
  const bool in_job_cgroup = engine.name == "podman" && !cgroup_parent.empty();
  // A path as --cgroup-parent is cgroupfs's form (systemd's is a slice name).
  if (in_job_cgroup) argv.insert(argv.end(), {"--cgroup-manager", "cgroupfs"});
  argv.insert(argv.end(), {"run", "--rm", "--init", "--name", container_name});
  if (in_job_cgroup) argv.insert(argv.end(), {"--cgroup-parent", cgroup_parent});
  // podman 4.3 lowers its own RLIMIT_NPROC to 32768 as it starts (measured in
  // /proc/<podman>/limits when started with 96363): runc, its grandchild, cannot set more.
  const rlim_t most_procs = engine.name == "podman" ? 32768 : RLIM_INFINITY;
  for (auto [name, resource, most] :
       {std::tuple{"nofile", RLIMIT_NOFILE, RLIM_INFINITY}, {"nproc", RLIMIT_NPROC, most_procs}}) {
    std::string arg = ulimit_arg(name, resource, most);
    if (!arg.empty()) argv.insert(argv.end(), {"--ulimit", arg});
  }
  for (const auto& [name, value] : job_env) {
    if (name == "CUDA_VISIBLE_DEVICES" || name == "NVIDIA_VISIBLE_DEVICES") continue;
    argv.insert(argv.end(), {"-e", name});
  }
  argv.insert(argv.end(), {"-v", workdir + ":" + workdir, "-w", workdir});
  // nodus's files for the job, where the job's variables say they are.
  auto metrics = job_env.find("NODUS_METRICS");
  if (metrics != job_env.end() && !metrics->second.empty() && metrics->second == job.metrics_path)
    argv.insert(argv.end(), {"-v", job.metrics_path + ":" + job.metrics_path});
  if (auto hook = job_env.find("NODUS_HOOK_DIR"); hook != job_env.end() && !hook->second.empty())
    argv.insert(argv.end(), {"-v", hook->second + ":" + hook->second});
  if (!cpus.empty()) {
    std::string list;
    for (int c : cpus) list += (list.empty() ? "" : ",") + std::to_string(c);
    argv.insert(argv.end(), {"--cpuset-cpus", list});
  }
  if (!job.gpu_indices.empty()) {
    if (engine.name == "docker") {
      std::string devices;
      for (int i : job.gpu_indices) devices += (devices.empty() ? "" : ",") + std::to_string(i);
      argv.insert(argv.end(), {"--gpus", "\"device=" + devices + "\""});
    } else {
      for (int i : job.gpu_indices)
        argv.insert(argv.end(), {"--device", "nvidia.com/gpu=" + std::to_string(i)});
    }
  }
  // "--": the image is never read as an option (--image=--privileged), by podman or docker.
  argv.insert(argv.end(), {"--", job.image});
  argv.insert(argv.end(), job.argv.begin(), job.argv.end());
  return argv;
}

void kill_container(const ContainerEngine& engine, const std::string& container_name,
                    const std::vector<std::string>& env) {
  // Best effort: the container may be gone already (--rm), which is what we want.
  (void)run_capture({engine.path, "kill", container_name}, env, std::chrono::seconds(10));
}

void remove_container(const ContainerEngine& engine, const std::string& container_name,
                      const std::vector<std::string>& env) {
  // Best effort, as kill_container: "no such container" is the usual, wanted answer.
  (void)run_capture({engine.path, "rm", "-f", container_name}, env, std::chrono::seconds(20));
}

namespace {

// rmdir of a cgroup folder, again every 20 ms while it still holds a process (EBUSY) until
// `until`: conmon and podman's cleanup leave the container's v1 folders a moment after podman
// says the container is gone (a `nodus ps` right after found them held, then empty).
void remove_when_left(const std::string& dir, std::chrono::steady_clock::time_point until) {
  while (::rmdir(dir.c_str()) != 0 && errno == EBUSY && std::chrono::steady_clock::now() < until)
    ::poll(nullptr, 0, 20);
}

}  // namespace

void remove_container_cgroups(const std::string& cgroup_parent) {
  if (cgroup_parent.empty() || cgroup_parent.find("..") != std::string::npos) return;
  // At most a second in all: a folder some process holds on to is left for a later command.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  auto mountinfo = read_small_file("/proc/self/mountinfo");
  if (!mountinfo) return;
  for (const auto& [type, mount_point] : cgroup_mounts(*mountinfo)) {
    const std::string top = mount_point + cgroup_parent;
    std::error_code ec;
    if (!std::filesystem::is_directory(top, ec)) continue;
    std::vector<std::string> dirs = cgroup_and_below(top);
    // The cgroup2 top is the job's own cgroup, which goes with the job (JobCgroup::remove).
    if (type != "cgroup") dirs.pop_back();
    for (const auto& d : dirs) remove_when_left(d, until);
  }
}

}  // namespace nodus::backend::local
