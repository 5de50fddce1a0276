#include "backend/local/container.h"

#include "backend/local/launch.h"
#include "backend/local/run_capture.h"
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

std::vector<std::string> container_run_argv(const ContainerEngine& engine,
                                            const std::string& container_name, const JobRecord& job,
                                            const std::map<std::string, std::string>& job_env,
                                            const std::string& workdir) {
  std::vector<std::string> argv = {engine.path, "run", "--rm", "--init", "--name", container_name};
  for (const auto& [name, value] : job_env) {
    if (name == "CUDA_VISIBLE_DEVICES" || name == "NVIDIA_VISIBLE_DEVICES") continue;
    argv.insert(argv.end(), {"-e", name});
  }
  argv.insert(argv.end(), {"-v", workdir + ":" + workdir, "-w", workdir});
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

}  // namespace nodus::backend::local
