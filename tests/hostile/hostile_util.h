#pragma once
// What the hostile tests share: running any command (timeout(1), sh) with a nodus home's
// environment, finding a job's processes by a marker in their command lines (a /proc scan that
// knows nothing of nodus), and reading the job's cgroup from its record.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "cli/fixtures.h"

namespace nodus::testing {

// Runs argv[0] from PATH with home's environment plus extra; returns like NodusHome::run.
RunResult run_command(const NodusHome& home, const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& extra);

// Live (non-zombie) processes whose command line contains marker, this process excluded.
std::vector<pid_t> processes_with(const std::string& marker);

// Waits until processes_with(marker) is empty or `limit` passed; returns what is left.
std::vector<pid_t> survivors_after(const std::string& marker, std::chrono::milliseconds limit);

// Waits until at least `count` processes carry marker (the job got going); false on timeout.
bool wait_for_processes(const std::string& marker, size_t count, std::chrono::milliseconds limit);

// Waits until at least `count` of those processes are named `sleep`: the job's own, not nodus's
// (whose command line holds the marker too) nor a shell's; false on timeout.
bool wait_for_sleeps(const std::string& marker, size_t count, std::chrono::milliseconds limit);

// The cgroup a job's record names ("contained by cgroup PATH"), "" when it names none.
std::string job_cgroup(const nlohmann::json& job);

// True when the cgroup folder is gone or holds no process.
bool cgroup_empty(const std::string& path);

// The pid of the `nodus __supervise` process whose NODUS_HOME is home's (not its sentinel);
// -1 when none.
pid_t supervise_process(const NodusHome& home);
// Its sentinel (named nodus-sentinel): -1 when none.
pid_t sentinel_process(const NodusHome& home);
// All of them: a sweep's cells' supervisors, its spares (cell_spawner.h), their sentinels.
std::vector<pid_t> supervise_processes(const NodusHome& home);
std::vector<pid_t> sentinel_processes(const NodusHome& home);

// True once pid is gone or a zombie (killed, whoever its parent is); false after `limit`.
bool wait_gone(pid_t pid, std::chrono::milliseconds limit);

// SIGKILLs what is left (so one failed test does not leave processes for the next).
void kill_all(const std::vector<pid_t>& pids);

// A marker no other test or run uses: "<prefix><pid><counter>" of digits.
std::string unique_marker(const std::string& prefix);

// True when this machine gives local jobs a cgroup (what nodus show says for a trivial job).
bool cgroups_available();

// True when this process may make mount namespaces and mount in them (root, as CI runs): the
// read-only and full-disk tests mount their NODUS_HOME in one of their own.
bool can_mount();

}  // namespace nodus::testing
