#pragma once
// The sentinel: the second enforcer of a local job, a process that outlives the supervisor on
// purpose. It is started by the supervisor just before the job is launched (so no moment exists in
// which the job runs and nothing would outlive the supervisor), told the job's pid once it has
// one (tell_sentinel_job), and moves into a session of its own, so
// neither a signal to nodus's process group (`timeout -s KILL 2 nodus run ...`, Ctrl-C's SIGINT)
// nor the supervisor's death takes it down. It enforces two things without the supervisor:
// - The supervisor's death: it blocks on a socket only the supervisor writes to; end-of-file
//   without the "done" message means the supervisor is gone (kill -9, OOM, a crash) and it kills
//   the job's tree at once.
// - The job's absolute deadline (arm_sentinel): SIGTERM at term_at unless the supervisor says it
//   sent one, SIGKILL at kill_at, each a little after the supervisor's own moment so that a
//   live supervisor normally acts first and records the reason. A supervisor that is stopped
//   (SIGSTOP), stuck or starved by the job's output still cannot let the job run past its cap.
// Killing the tree: with a cgroup (cgroup.h) cgroup.kill, waiting until it is empty, then
// removing it; without one, repeated /proc passes over the job's session, process group and
// NODUS_TREE token (what a process that called setsid() and emptied its environment escapes:
// the reason cgroups are preferred).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace nodus::backend {

// How long after the supervisor's own moment the sentinel acts: SIGKILL soon after (a cap's kill
// is due kKillMargin = 25 ms before the cap, so this still lands inside it); SIGTERM later, so a
// live but busy supervisor's TERM is not doubled (it tells the sentinel when it sent one).
inline constexpr std::chrono::milliseconds kSentinelKillLag{10};
inline constexpr std::chrono::milliseconds kSentinelTermLag{100};

// How long the supervisor may stay stopped (SIGSTOP) while its job runs before the sentinel
// kills the job: a job that stops its supervisor and then kills the sentinel would run unwatched.
inline constexpr std::chrono::milliseconds kSupervisorStoppedLimit{2000};

struct Sentinel {
  pid_t pid = -1;
  int fd = -1;  // the supervisor's end of the socket
};

struct SentinelSpec {
  pid_t job_pid = 0;       // the job's main process (its session and process group id); 0
                           // until tell_sentinel_job: the token and the cgroup still hold
  std::string tree_token;  // NODUS_TREE value
  std::string cgroup;      // the job's cgroup folder, "" when it has none
  int end_fd = -1;         // end_time_path's file (core/job.h): when the sentinel killed the
                           // tree; the caller keeps and closes its own copy
  bool container = false;  // the job's main process is a container engine's client
};

// Starts the sentinel. Call from the thread that submits jobs, before the supervisor starts other
// threads. Returns pid -1 if it could not be started.
//
// A fork of the caller, unless the program answers run_sentinel_command and said so
// (exec_sentinels): then a vfork and an exec of the program itself (posix_spawn of
// /proc/self/exe, the same file even if the one on disk was replaced). A fork write-protects
// every page of the supervisor for as long as the sentinel lives, and each first write to one is
// a page fault, some 15-20 us each on a VM: measured, 70-80 such faults in the rest of a
// `nodus run -- /bin/true`, about 3 ms of the supervisor's time between the launch and its exit.
// The exec'd sentinel pays its own start-up instead, beside the job rather than before it. Should
// the spawn fail, the sentinel is forked as before.
Sentinel start_sentinel(const SentinelSpec& spec);

// The hidden command an exec'd sentinel runs: `PROGRAM __sentinel SUPERVISOR-PID CONTAINER
// END-FD TOKEN CGROUP`, with the supervisor's socket as descriptor 3 and /dev/null on 0-2.
inline constexpr const char* kSentinelCommand = "__sentinel";

// From main, before anything else, when argv[1] is kSentinelCommand: runs the sentinel and exits
// (125 when the arguments are not a sentinel's).
[[noreturn]] void run_sentinel_command(int argc, char** argv);

// Says that this program's main answers run_sentinel_command: start_sentinel execs it from now on.
void exec_sentinels();

// Tells a sentinel started before the launch the job's main process.
bool tell_sentinel_job(const Sentinel& sentinel, pid_t job_pid);

// Hands the sentinel the job's deadlines (steady clock = CLOCK_MONOTONIC, the same in every
// process). False when the sentinel cannot be reached (it is gone).
bool arm_sentinel(const Sentinel& sentinel, std::chrono::steady_clock::time_point term_at,
                  std::chrono::steady_clock::time_point kill_at);

// The supervisor sent SIGTERM itself: the sentinel does not send a second one.
bool tell_sentinel_term_sent(const Sentinel& sentinel);

// What the sentinel's end of the socket says, read without waiting (call when Sentinel::fd is
// readable): that it is gone (end of file: killed, since it exits only when dismissed), or that
// it killed the job because the supervisor was stopped for that long.
struct SentinelNews {
  bool gone = false;
  std::optional<std::chrono::nanoseconds> killed_for_stopped_supervisor;
  std::optional<double> killed_at;  // unix seconds: when that kill found the tree dead
};
SentinelNews read_sentinel(const Sentinel& sentinel);

// The job's tree is taken care of: the sentinel exits without killing anything; it is reaped.
void dismiss_sentinel(Sentinel& sentinel);

}  // namespace nodus::backend
