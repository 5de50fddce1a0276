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

// Whether `image` is in the engine's local store (`podman image exists`, `docker image
// inspect`). nodus never lets the engine pull during a run: a pull would be billed, and with no
// registry reachable it fails after the engine's own timeout. Otherwise an Error (exit code 125),
// one line naming the cause and the fix (`podman pull IMAGE`).
Result<void> check_image(const ContainerEngine& engine, const std::string& image,
                         const std::vector<std::string>& env, std::chrono::milliseconds timeout);

// Whether the engine's OCI runtime can run a container on this host, as far as it can be told
// before one runs (and is billed): podman with crun on a hybrid cgroup host (cgroup v1 with a
// cgroup2 mount too, /sys/fs/cgroup/unified) fails every container ("cgroups in hybrid mode not
// supported"); runc works there. Otherwise an Error (exit code 125), one line naming the cause
// and the fix. Docker, and what `podman info` cannot say, pass.
Result<void> check_runtime(const ContainerEngine& engine, const std::string& image,
                           const std::vector<std::string>& env, std::chrono::milliseconds timeout);

// The folder podman's containers of this job are made in (--cgroup-parent): the job's own
// cgroup, as a path under the cgroup2 mount ("/nodus/job-..."), so that the container's
// processes (started by conmon, not by the job's process) are inside the job's cgroup and its
// cgroup.kill, the sentinel's included, ends them. "" when the job has no cgroup or where the job
// cgroup has controllers (a pure cgroup v2 host): runc could not enable them there under a cgroup
// that holds processes. Measured on a hybrid host (docs/containers.md).
std::string container_cgroup_parent(const std::string& job_cgroup_path);

// The command that runs `job` in its image:
//   <engine> [--cgroup-manager cgroupfs] run --rm --init --name <name> [--cgroup-parent P]
//     --ulimit nofile=S:H --ulimit nproc=S:H -e NAME... -v <dir>:<dir> -w <dir> <gpus> image
//     argv...
// The ulimits are this process's own (the job's, outside a container): the engine's defaults
// (podman asks for nofile 1048576 as root) are refused where the hard limit is lower, and a
// container job should get what the same job gets outside one.
// The job's environment (job_env) goes by name only (`-e NAME`: the engine takes the value from
// its own environment), so values never show in `ps`. CUDA_VISIBLE_DEVICES and
// NVIDIA_VISIBLE_DEVICES stay outside: the container sees only the assigned GPUs, numbered from
// 0. <dir> is the job's workdir (absolute), mounted at the same path. nodus's own files for the
// job are mounted at their paths too, so that what the job writes there reaches nodus as it
// would outside a container: $NODUS_METRICS (the file) and, for an instrumented Python job,
// $NODUS_HOOK_DIR (the hook, on the job's PYTHONPATH, and the files it writes). `cpus`, when
// not empty: --cpuset-cpus (the job's CPU set; the engine's client is not the container's
// parent, so its affinity would not reach it). GPUs: docker --gpus '"device=0,1"', podman
// --device nvidia.com/gpu=N (CDI) for each.
std::vector<std::string> container_run_argv(const ContainerEngine& engine,
                                            const std::string& container_name, const JobRecord& job,
                                            const std::map<std::string, std::string>& job_env,
                                            const std::string& workdir,
                                            const std::string& cgroup_parent = "",
                                            const std::vector<int>& cpus = {});

// `<engine> kill <name>`; the container outlives its killed client otherwise.
void kill_container(const ContainerEngine& engine, const std::string& container_name,
                    const std::vector<std::string>& env);

// `<engine> rm -f <name>` once the job's tree is dead: a conmon killed with the job's cgroup
// never runs podman's --rm cleanup, and the stopped container would stay in `podman ps -a`.
void remove_container(const ContainerEngine& engine, const std::string& container_name,
                      const std::vector<std::string>& env);

// After remove_container: the empty cgroups podman made for the container under
// `cgroup_parent` (container_cgroup_parent's answer), in every cgroup hierarchy mounted here
// (on a hybrid host podman makes <parent>/libpod-ID and <parent>/conmon in each v1 controller
// too, and leaves the conmon ones). Children first; rmdir only, so a cgroup still holding a
// process stays (after up to a second in all of waiting for it to empty: conmon leaves late).
// The cgroup2 folder <parent> itself is the job's (JobCgroup::remove's); the v1 ones go too.
void remove_container_cgroups(const std::string& cgroup_parent);

}  // namespace nodus::backend::local
