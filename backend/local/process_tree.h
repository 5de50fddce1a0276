#pragma once
// A job's process tree, as the local backend defines it: every process that is
//   - in the job's process group or session (the main process calls setsid(), so both ids are
//     the main pid; the kernel keeps that id from being reused while a member lives), or
//   - a descendant of the main process through parent links, or
//   - an orphan reparented to this supervisor (a subreaper, see local_backend.h) that is not
//     one of nodus's helper processes (core/helper_children.h), not the main process of another
//     job and not in the supervisor's own session. When several jobs run, an orphan is the
//     job's only if its environment carries the job's tree token (kTreeTokenEnv); with one job
//     running, every such orphan is that job's.
// This catches what kill(-pgid) misses: setsid children (left the group, still descendants or
// orphans of the subreaper) and double-forked daemons (reparented to the supervisor).

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/proc.h"
#include "core/result.h"

namespace nodus::backend::local {

// Set in every local job's environment; its value identifies the job's tree.
inline constexpr const char* kTreeTokenEnv = "NODUS_TREE";

// A token unique to this process and call: "<supervisor pid>.<counter>".
std::string new_tree_token();

// The root of a job's tree. Once the main process is reaped its pid may be reused, so the tree
// no longer follows it (its group and session ids stay reserved while a member lives).
struct TreeRoot {
  pid_t main_pid = 0;
  std::string token;
  bool main_reaped = false;
};

// The process-wide list of live jobs. A job is registered from its start until kill() found
// nothing of it left.
void register_tree(pid_t main_pid, const std::string& token);
void mark_main_reaped(pid_t main_pid);
void unregister_tree(pid_t main_pid);

// What select_tree needs to know beyond /proc; live_context() fills it from this process.
struct TreeContext {
  pid_t self_pid = 0;
  pid_t self_session = 0;
  std::vector<pid_t> job_mains;  // main pids of every live job of this supervisor
  std::function<bool(pid_t)> is_helper = [](pid_t) { return false; };
  // Reads the tree token from a process's environment (nullopt: unset or unreadable).
  std::function<std::optional<std::string>(pid_t)> read_token = [](pid_t) {
    return std::optional<std::string>();
  };
};
TreeContext live_context();

// The members of main_pid's tree among `procs` (the rule above). Pure; unit-tested.
std::vector<ProcStat> select_tree(const std::vector<ProcStat>& procs, const TreeRoot& root,
                                  const TreeContext& ctx);

// The live members of a job's tree now (zombies included), from a /proc scan. A main pid that
// is not registered is taken as a live main process without a token.
std::vector<ProcStat> job_tree(pid_t main_pid);

// Sends sig to the job's process group and to every member. Returns how many were signalled.
int signal_tree(pid_t main_pid, int sig);

// SIGKILLs every member again and again, reaping the zombies that are this process's children
// (waitpid on those pids only, never waitpid(-1), which could take a helper's status), until
// /proc shows nothing of the tree. on_reaped gets each reaped pid and its wait status (the
// caller keeps the main process's). Waits on pidfds between rounds, not on a sleep. An error
// names the survivors if some are left after `limit` (a process stuck in the kernel, state D).
Result<void> kill_tree(pid_t main_pid, std::chrono::milliseconds limit,
                       const std::function<void(pid_t, int)>& on_reaped);

// Reaps pid if it is a zombie child of this process; returns its wait status.
std::optional<int> reap_if_zombie(pid_t pid);

}  // namespace nodus::backend::local
