#pragma once
// A sentinel outlives the supervisor on purpose. PR_SET_PDEATHSIG takes a job's main process
// down with a supervisor that dies (kill -9, OOM), but not the main process's own children
// (a DataLoader worker, a shell's background jobs): they would be re-parented to init and run on
// uncapped. The sentinel is a forked child of the supervisor that blocks reading a pipe only the
// supervisor writes to; end-of-file without the "done" byte means the supervisor is gone, and it
// kills everything in the job's session or process group or carrying the job's tree token.

#include <sys/types.h>

#include <string>

namespace nodus::backend {

struct Sentinel {
  pid_t pid = -1;
  int fd = -1;  // write end: one byte "done" on a normal end
};

// Forks the sentinel for the job whose main process (and session id) is job_pid. Call from the
// main thread, before other threads exist. Returns pid -1 if it could not be started.
Sentinel start_sentinel(pid_t job_pid, const std::string& tree_token);

// The job's tree is taken care of: the sentinel exits without killing anything; it is reaped.
void dismiss_sentinel(Sentinel& sentinel);

}  // namespace nodus::backend
