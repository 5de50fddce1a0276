#pragma once
// The "local" backend: a job is a process tree on this machine.
//
// - Making the backend makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so
//   descendants that double-fork or setsid() reparent to it and can still be found and killed.
// - submit() forks from the calling thread; the job gets PR_SET_PDEATHSIG(SIGKILL), which
//   fires when that *thread* exits: call submit() from a thread that lives as long as the
//   supervisor (the main thread). It returns once the exec succeeded; job.backend_id is the
//   main pid, job.started_at the time just before the fork. The job's environment is nodus's
//   plus LaunchSpec.env plus NODUS_TREE (process_tree.h). With job.image set the job runs in
//   a container (container.h).
// - wait() ppolls the main process's pidfd, both output pipes and wake_fd until `deadline`
//   exactly; output goes to the log, the terminal (attach) and on_line (output.h).
// - signal() reaches the whole tree (process_tree.h); kill() SIGKILLs it until nothing is left.
//   For a job with GPUs whose main process had already exited, kill() first kills the tree's
//   processes still holding /dev/nvidia* and appends what it found to job.note (gpu_holders.h).
// - One thread at a time per job. The supervisor must not ignore SIGCHLD (the exit status
//   would be lost). Destroying the backend kills what is left of its jobs.

#include <memory>

#include "backend/backend.h"

namespace nodus::backend {

std::unique_ptr<Backend> make_local_backend();

}  // namespace nodus::backend
