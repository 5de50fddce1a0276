#pragma once
// Starting one process the way every local job (and helper) starts: Boost.Process v2's
// default_launcher forks; in the child, before exec, the process gets its own session and
// process group, dies with the supervisor (PR_SET_PDEATHSIG), has default signal dispositions
// and an empty mask, stdin from /dev/null, stdout and stderr on the given descriptors, and the
// job's working directory; with a cgroup it joins that cgroup first; with CPUs it runs on those.
// launch() returns once the exec succeeded (or why it did not).

#include <sys/types.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace nodus::backend::local {

struct LaunchRequest {
  std::vector<std::string> argv;  // argv[0] as typed; resolved on the environment's PATH
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  std::string workdir;            // "" keeps nodus's working directory
  int stdout_fd = -1;             // become the child's descriptors 1 and 2
  int stderr_fd = -1;
  // cgroup.procs of the job's cgroup (cgroup.h), -1 for none: the child writes "0" to it before
  // anything else, so the job is contained before it can fork.
  int cgroup_procs_fd = -1;
  // The CPUs the child may run on (cpuset.h); empty: nodus's own. Set with sched_setaffinity
  // in the child before exec, so the job's first thread already runs there.
  std::vector<int> cpus;
};

struct Launched {
  pid_t pid = -1;
  int pidfd = -1;         // pidfd_open(pid): readable once the process has exited
  double started_at = 0;  // unix seconds, taken just before the fork
};

// Errors: 127 "command not found: 'foo'" (also an exec that fails with ENOENT), 126 "cannot
// run 'foo': permission denied" (or is a directory, exec format error), 125 anything else
// (bad workdir, no descriptors left, fork failed).
Result<Launched> launch(const LaunchRequest& request);

// Where exec would find `command`: a name without '/' is searched on path_env (an empty entry
// means the working directory, as for execvp); a path with '/' is taken relative to workdir.
// Returns an absolute path to an executable regular file, or the 127/126 error above.
Result<std::string> resolve_executable(const std::string& command, const std::string& path_env,
                                       const std::string& workdir);

// nodus's own environment with `overrides` set on top, as "NAME=value" strings.
std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides);

// The value of NAME in a "NAME=value" list, "" when unset.
std::string env_value(const std::vector<std::string>& env, std::string_view name);

}  // namespace nodus::backend::local
