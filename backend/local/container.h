#pragma once
// --image: a local job runs inside a container, through podman (preferred) or docker. The job's
// process is the engine's client (`podman run --rm ...`), which forwards signals to the
// container; --init puts a small init in the container to reap and pass them on.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/result.h"

namespace nodus::backend::local {

struct ContainerEngine {
  std::string name;  // "podman" or "docker"
  std::string path;  // the executable
};

// The first of podman, docker (on env's PATH) whose `<engine> info` exits 0 within `timeout`.
// Otherwise an Error (exit code 125) naming what is wrong with each, e.g. "--image
// pytorch/pytorch: needs a working podman or docker: docker is installed but its engine is not
// reachable (Cannot connect to the Docker daemon ...); podman not found".
Result<ContainerEngine> find_container_engine(const std::string& image,
                                              const std::vector<std::string>& env,
                                              std::chrono::milliseconds timeout);

// The command that runs `job` in its image:
//   <engine> run --rm --init --name <name> -e NAME... -v <dir>:<dir> -w <dir> <gpus> image argv...
// The job's environment (job_env) goes by name only (`-e NAME`: the engine takes the value from
// its own environment), so values never show in `ps`. CUDA_VISIBLE_DEVICES and
// NVIDIA_VISIBLE_DEVICES stay outside: the container sees only the assigned GPUs, numbered from
// 0. <dir> is the job's workdir (absolute), mounted at the same path. GPUs: docker
// --gpus '"device=0,1"', podman --device nvidia.com/gpu=N (CDI) for each.
std::vector<std::string> container_run_argv(const ContainerEngine& engine,
                                            const std::string& container_name, const JobRecord& job,
                                            const std::map<std::string, std::string>& job_env,
                                            const std::string& workdir);

// `<engine> kill <name>`; the container outlives its killed client otherwise.
void kill_container(const ContainerEngine& engine, const std::string& container_name,
                    const std::vector<std::string>& env);

}  // namespace nodus::backend::local
