#include "backend/local/sentinel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "backend/local/cgroup.h"
#include "backend/local/process_tree.h"
#include "core/error.h"
#include "core/helper_children.h"
#include "core/proc.h"

namespace nodus::backend {
namespace {

using Clock = std::chrono::steady_clock;

// One message on the socket: a kind and, for kArm, two CLOCK_MONOTONIC instants in ns (for kJob,
// the job's pid in term_ns). The sentinel's one message back, kKilledStopped, carries how long
// the supervisor had been stopped (ns, in term_ns).
struct Message {
  char kind;  // kDone, kArm, kTermSent, kJob; back: kKilledStopped
  int64_t term_ns;
  int64_t kill_ns;
};
constexpr char kDone = 'd';
constexpr char kArm = 'a';
constexpr char kTermSent = 't';
constexpr char kJob = 'j';
constexpr char kKilledStopped = 's';
constexpr char kKilledAt = 'k';  // then: the job's tree is dead, at CLOCK_REALTIME ns (term_ns)

// While the job runs the sentinel looks at its supervisor this often: a supervisor stopped
// (SIGSTOP, state T) for kSupervisorStoppedLimit has its job killed.
constexpr int kSupervisorCheckMs = 200;

int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t ns_of(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

bool send_message(const Sentinel& s, const Message& m) {
  if (s.pid <= 0 || s.fd < 0) return false;
  ssize_t n;
  do {
    n = ::send(s.fd, &m, sizeof m, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof m);
}

class Enforcer {
 public:
  explicit Enforcer(const SentinelSpec& spec)
      : spec_(spec), needle_(std::string(local::kTreeTokenEnv) + "=" + spec.tree_token) {}

  // Once to each process, as the supervisor sends it (LocalBackend::signal): a container's main
  // process has it from the engine's client, the job's main process here.
  void term() {
    if (spec_.container) {
      if (main_is_the_jobs()) ::kill(spec_.job_pid, SIGTERM);
    } else if (!spec_.cgroup.empty()) {
      local::cgroup_signal_path(spec_.cgroup, SIGTERM);
    } else {
      for (pid_t pid : members()) ::kill(pid, SIGTERM);
    }
  }

  // Nothing of the job may run on: with a cgroup, cgroup.kill until it is empty, then rmdir;
  // without, /proc passes until one finds nothing (a process may fork while we scan), bounded.
  void kill() {
    if (!spec_.cgroup.empty()) {
      local::cgroup_kill_path(spec_.cgroup);
      local::cgroup_wait_empty_path(spec_.cgroup, std::chrono::seconds(60));
      return;
    }
    for (int round = 0; round < 100; ++round) {
      auto pids = members();
      if (pids.empty()) break;
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
      ::poll(nullptr, 0, 10);
    }
  }

  void set_job(pid_t job_pid) { spec_.job_pid = job_pid; }

  void remove_cgroup() {
    if (!spec_.cgroup.empty() && !local::cgroup_populated_path(spec_.cgroup))
      ::rmdir(spec_.cgroup.c_str());
  }

 private:
  // The job's processes by the fallback rule: its session or process group, or its token.
  std::vector<pid_t> members() const {
    std::vector<pid_t> out;
    const pid_t self = ::getpid();
    for (const ProcStat& p : scan_processes()) {
      if (p.pid == self || p.zombie()) continue;
      const bool by_group =
          spec_.job_pid > 0 && (p.session == spec_.job_pid || p.pgrp == spec_.job_pid);
      if (by_group || read_proc_env(p.pid, local::kTreeTokenEnv) == spec_.tree_token)
        out.push_back(p.pid);
    }
    return out;
  }

  // The job's main process is still the one it was told of (a session leader: its pid was not
  // given to another process), and not yet reaped.
  bool main_is_the_jobs() const {
    if (spec_.job_pid <= 0) return false;
    auto stat = read_proc_stat(spec_.job_pid);
    return stat && stat->session == spec_.job_pid && !stat->zombie();
  }

  SentinelSpec spec_;
  std::string needle_;
};

// Records now (CLOCK_REALTIME) as the moment the job's tree was found dead; returns it in ns.
int64_t write_end_time(int end_fd) {
  timespec real;
  ::clock_gettime(CLOCK_REALTIME, &real);
  const int64_t ns = static_cast<int64_t>(real.tv_sec) * 1'000'000'000 + real.tv_nsec;
  if (end_fd >= 0) {
    char text[32];
    int n = std::snprintf(text, sizeof text, "%.3f\n", static_cast<double>(ns) / 1e9);
    if (n > 0) {
      ssize_t ignored = ::pwrite(end_fd, text, static_cast<size_t>(n), 0);
      (void)ignored;
    }
  }
  return ns;
}

// What the sentinel blocks: only the socket may end it (and SIGKILL).
sigset_t blocked_signals() {
  sigset_t block;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&block, sig);
  return block;
}

bool exec_sentinel = false;  // exec_sentinels()

[[noreturn]] void watch(int fd, int end_fd, const SentinelSpec& spec, pid_t supervisor);

// The forked sentinel: the supervisor's memory, descriptors and session, until it sheds them.
[[noreturn]] void sentinel_main(int fd, const SentinelSpec& spec) {
  const pid_t supervisor = ::getppid();
  // Out of the supervisor's session and process group: a signal to that group (timeout -s KILL,
  // a terminal's SIGINT or SIGHUP) must not reach us. Only the socket may end us.
  ::setsid();
  ::prctl(PR_SET_NAME, "nodus-sentinel");  // its comm in ps and /proc: not a second supervisor
  const sigset_t block = blocked_signals();
  ::sigprocmask(SIG_BLOCK, &block, nullptr);
  // Keep only the socket (as descriptor 3) and /dev/null on 0-2: a copy of a pipe's write end
  // (a job's status pipe, another job's output) would keep its reader waiting for end-of-file.
  // And the end-time file as descriptor 4.
  int keep = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  int keep_end = spec.end_fd >= 0 ? ::fcntl(spec.end_fd, F_DUPFD_CLOEXEC, 10) : -1;
  int null = ::open("/dev/null", O_RDWR);
  for (int std_fd = 0; std_fd < 3; ++std_fd) ::dup2(null, std_fd);
  int end_fd = -1;
  if (keep >= 0) {
    ::dup2(keep, 3);
    fd = 3;
    if (keep_end >= 0) {
      ::dup2(keep_end, 4);
      end_fd = 4;
    }
    ::syscall(SYS_close_range, 5U, ~0U, 0U);
  }
  watch(fd, end_fd, spec, supervisor);
}

// Both sentinels' loop: the socket is `fd`, the end-time file `end_fd` (-1: none).
[[noreturn]] void watch(int fd, int end_fd, const SentinelSpec& spec, pid_t supervisor) {
  Enforcer enforcer(spec);
  const int64_t term_lag = std::chrono::nanoseconds(kSentinelTermLag).count();
  const int64_t kill_lag = std::chrono::nanoseconds(kSentinelKillLag).count();
  std::optional<int64_t> term_at, kill_at;
  int64_t stopped_since = -1;  // when the supervisor was first seen stopped, -1: running
  bool term_done = false, kill_done = false;
  const int64_t stopped_limit = std::chrono::nanoseconds(kSupervisorStoppedLimit).count();
  for (;;) {
    int timeout_ms = -1;
    const int64_t now = now_ns();
    std::optional<int64_t> next;
    if (term_at && !term_done) next = *term_at;
    if (kill_at && !kill_done && (!next || *kill_at < *next)) next = *kill_at;
    if (next)
      timeout_ms = static_cast<int>(std::max<int64_t>(0, (*next - now + 999'999) / 1'000'000));
    // From the start, not from kJob: a job may stop its supervisor before it could say who the
    // job is; the cgroup and the token find the job's processes without that.
    if (!kill_done && (timeout_ms < 0 || timeout_ms > kSupervisorCheckMs))
      timeout_ms = kSupervisorCheckMs;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno != EINTR) break;
    if (r > 0) {
      Message m{};
      ssize_t n = ::recv(fd, &m, sizeof m, MSG_WAITALL);
      if (n < 0 && errno == EINTR) continue;
      if (n != static_cast<ssize_t>(sizeof m)) break;  // EOF: the supervisor is gone
      if (m.kind == kDone) ::_exit(0);
      if (m.kind == kTermSent) term_done = true;
      if (m.kind == kJob && m.term_ns > 0) enforcer.set_job(static_cast<pid_t>(m.term_ns));
      if (m.kind == kArm) {
        term_at = m.term_ns + term_lag;
        kill_at = m.kill_ns + kill_lag;
      }
      continue;
    }
    const int64_t t = now_ns();
    if (!kill_done) {
      // A job that stops its supervisor (kill -STOP $PPID) must not run on unwatched: only this
      // process is left to end it, and the job could kill this one next.
      if (!process_stopped(supervisor)) {
        stopped_since = -1;
      } else if (stopped_since < 0) {
        stopped_since = t;
      } else if (t - stopped_since >= stopped_limit) {
        // For the supervisor, once it runs again: why its job died. Sent before the kill, so
        // that it is there by the time the supervisor sees the job's end.
        Message back{kKilledStopped, t - stopped_since, 0};
        (void)::send(fd, &back, sizeof back, MSG_NOSIGNAL | MSG_DONTWAIT);
        enforcer.kill();
        kill_done = term_done = true;
        const int64_t dead_ns = write_end_time(end_fd);
        Message dead{kKilledAt, dead_ns, 0};
        (void)::send(fd, &dead, sizeof dead, MSG_NOSIGNAL | MSG_DONTWAIT);
        continue;
      }
    }
    if (kill_at && !kill_done && t >= *kill_at) {
      enforcer.kill();
      kill_done = term_done = true;
      // The bill's end, should the supervisor be stopped: it would otherwise bill to whenever it
      // runs again, and a command that finds it stopped reads the moment from the file.
      const int64_t dead_ns = write_end_time(end_fd);
      Message dead{kKilledAt, dead_ns, 0};
      (void)::send(fd, &dead, sizeof dead, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else if (term_at && !term_done && t >= *term_at) {
      enforcer.term();
      term_done = true;
    }
  }
  enforcer.kill();
  write_end_time(end_fd);
  enforcer.remove_cgroup();
  ::_exit(0);
}

// The exec'd sentinel: posix_spawn (a vfork: the supervisor's pages stay its own) of this
// program as `__sentinel`, in a session of its own from the start, with the signals it blocks
// blocked from the start, the socket as descriptor 3, the end-time file as 4 and /dev/null on
// 0-2. Returns its pid, -1 when it could not be spawned.
pid_t spawn_sentinel(int fd, const SentinelSpec& spec) {
  // Above 10 first, so that no dup2 below can overwrite the other's source.
  const int sock = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  const int end = spec.end_fd >= 0 ? ::fcntl(spec.end_fd, F_DUPFD_CLOEXEC, 10) : -1;
  pid_t pid = -1;
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  if (sock >= 0 && (spec.end_fd < 0 || end >= 0) && posix_spawn_file_actions_init(&files) == 0) {
    if (posix_spawnattr_init(&attr) == 0) {
      const sigset_t block = blocked_signals();
      sigset_t all;
      sigfillset(&all);
      const std::string supervisor = std::to_string(::getpid());
      const std::string end_arg = end >= 0 ? "4" : "-1";
      char* argv[] = {
          const_cast<char*>("nodus-sentinel"),    const_cast<char*>(kSentinelCommand),
          const_cast<char*>(supervisor.c_str()),  const_cast<char*>(spec.container ? "1" : "0"),
          const_cast<char*>(end_arg.c_str()),     const_cast<char*>(spec.tree_token.c_str()),
          const_cast<char*>(spec.cgroup.c_str()), nullptr};
      const bool ready =
          posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDWR, 0) == 0 &&
          posix_spawn_file_actions_adddup2(&files, 0, 1) == 0 &&
          posix_spawn_file_actions_adddup2(&files, 0, 2) == 0 &&
          posix_spawn_file_actions_adddup2(&files, sock, 3) == 0 &&
          (end < 0 || posix_spawn_file_actions_adddup2(&files, end, 4) == 0) &&
          posix_spawnattr_setflags(
              &attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) == 0 &&
          posix_spawnattr_setsigmask(&attr, &block) == 0 &&
          posix_spawnattr_setsigdefault(&attr, &all) == 0;
      if (ready && posix_spawn(&pid, "/proc/self/exe", &files, &attr, argv, environ) != 0) pid = -1;
      posix_spawnattr_destroy(&attr);
    }
    posix_spawn_file_actions_destroy(&files);
  }
  for (int copy : {sock, end})
    if (copy >= 0) ::close(copy);
  return pid;
}

}  // namespace

void exec_sentinels() { exec_sentinel = true; }

void run_sentinel_command(int argc, char** argv) {
  // Named first: a job that looks for its sentinel (pgrep -x nodus-sentinel) finds it by name as
  // soon as it can, not as "exe".
  ::prctl(PR_SET_NAME, "nodus-sentinel");
  char* rest = nullptr;
  const long supervisor = argc == 7 ? std::strtol(argv[2], &rest, 10) : 0;
  if (argc != 7 || supervisor <= 0 || *rest != '\0') {
    std::fprintf(stderr,
                 "nodus: %s: not a sentinel's arguments (SUPERVISOR-PID CONTAINER END-FD TOKEN "
                 "CGROUP): a local job's supervisor starts it, not a user\n",
                 kSentinelCommand);
    ::_exit(exit_code::kNodusError);
  }
  // Whatever the supervisor had open without close-on-exec is not ours to hold (a copy of a pipe's
  // write end would keep its reader waiting for end-of-file).
  ::syscall(SYS_close_range, 5U, ~0U, 0U);
  SentinelSpec spec;
  spec.container = std::string_view(argv[3]) == "1";
  const int end_fd = std::string_view(argv[4]) == "4" ? 4 : -1;
  spec.end_fd = end_fd;
  spec.tree_token = argv[5];
  spec.cgroup = argv[6];
  watch(3, end_fd, spec, static_cast<pid_t>(supervisor));
}

Sentinel start_sentinel(const SentinelSpec& spec) {
  int p[2];  // a socket pair, so that a dead sentinel never SIGPIPEs the supervisor
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0) return {};
  if (exec_sentinel) {
    if (pid_t spawned = spawn_sentinel(p[0], spec); spawned > 0) {
      ::close(p[0]);
      register_helper_child(spawned);
      return {spawned, p[1]};
    }
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    return {};
  }
  if (pid == 0) {
    ::close(p[1]);
    sentinel_main(p[0], spec);
  }
  ::close(p[0]);
  register_helper_child(pid);
  return {pid, p[1]};
}

bool arm_sentinel(const Sentinel& s, Clock::time_point term_at, Clock::time_point kill_at) {
  return send_message(s, {kArm, ns_of(term_at), ns_of(kill_at)});
}

bool tell_sentinel_job(const Sentinel& s, pid_t job_pid) {
  return send_message(s, {kJob, static_cast<int64_t>(job_pid), 0});
}

bool tell_sentinel_term_sent(const Sentinel& s) { return send_message(s, {kTermSent, 0, 0}); }

SentinelNews read_sentinel(const Sentinel& s) {
  SentinelNews news;
  if (s.pid <= 0 || s.fd < 0) return news;
  for (;;) {
    Message m{};
    ssize_t n = ::recv(s.fd, &m, sizeof m, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return news;  // EAGAIN: nothing more now
    if (n == 0) {            // end of file: the sentinel is gone
      news.gone = true;
      return news;
    }
    if (n != static_cast<ssize_t>(sizeof m)) continue;
    if (m.kind == kKilledStopped)
      news.killed_for_stopped_supervisor = std::chrono::nanoseconds(m.term_ns);
    if (m.kind == kKilledAt) news.killed_at = static_cast<double>(m.term_ns) / 1e9;
  }
}

void dismiss_sentinel(Sentinel& s) {
  if (s.pid <= 0) return;
  (void)send_message(s, {kDone, 0, 0});
  ::close(s.fd);
  while (::waitpid(s.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  unregister_helper_child(s.pid);
  s = {};
}

}  // namespace nodus::backend
