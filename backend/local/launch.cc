// launch(): Boost.Process v2's vfork_launcher does the vfork, the exec and the report of an
// exec failure (the child sets the launcher's error code, in memory it shares with the parent
// until it execs); the ChildSetup initializer below does everything else in the child (its
// on_exec_setup runs after vfork, before exec).
//
// Why vfork and not fork: the child borrows nodus's memory instead of copying its page tables
// and then faulting in copies of every page it touches, and exec does not tear a copy down.
// NODUS_TIMING=1 put the fork-to-exec step of `nodus run -- /bin/true` at 2.6 ms of the
// supervisor's CPU with fork. The price is the rule that comes with vfork: the child must not
// write anything the parent's other threads use, nor allocate, nor take a lock. ChildSetup only
// makes system calls on its own values, and every signal is blocked around the vfork so that no
// handler of nodus's runs in the child before it resets them to their defaults.
//
// What is written by hand here, and why (Boost 1.81 as packaged in Debian 12):
// - Finding the executable (executable.cc): the launcher execs the path it is given, and
//   environment::find_executable cannot tell "not found" (127) from "found but not
//   executable" (126), nor search the job's PATH with the job's workdir.
// - Closing inherited descriptors: 1.81's close_all() compares each whitelist entry with
//   itself, so descriptors between 3 and its errno pipe stay open across exec; ChildSetup
//   closes every descriptor except 0-2 and the launcher's whitelist itself.
// - Failure before exec: when on_exec_setup fails, the launcher writes errno to its pipe, which
//   the parent would read as an exec error ("chdir failed" would look like "command not
//   found"). ChildSetup reports its own failures, with the step, on a second pipe and _exit()s.
// - Exiting after a failed exec: the launcher calls exit(), which in a vforked child would run
//   atexit handlers and flush stdio buffers in the parent's own memory;
//   ChildSetup's on_exec_error calls _exit() first. 1.81 detects that hook by a five-argument
//   signature but calls the four-argument one, so both are declared.
// - Watching the child: the process object is detached (its destructor would SIGKILL the child)
//   and the caller gets its own pidfd_open() descriptor to poll.
// - Including the headers: with BOOST_PROCESS_USE_STD_FS, 1.81's config.hpp names
//   boost::optional without including it, and process.hpp / default_launcher.hpp use
//   is_convertible and decay unqualified; both are supplied before the Boost includes.

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <type_traits>

// The 1.81 header fixes described above; they must come before the Boost.Process headers.
#include <boost/optional.hpp>
namespace boost::process::v2 {
using std::decay;
using std::is_convertible;
}  // namespace boost::process::v2

#include <boost/asio/io_context.hpp>
#include <boost/process/v2/posix/vfork_launcher.hpp>
#include <boost/process/v2/process.hpp>

// In the vforked child the launcher closes descriptors with Boost's close_all, which allocates
// (opendir) unless the kernel headers offer close_range (5.11 or later: Debian 12 has 6.1).
#include <linux/version.h>
static_assert(LINUX_VERSION_CODE >= KERNEL_VERSION(5, 11, 0),
              "Boost.Process's close_all would allocate in the vforked child");

#include "backend/local/launch.h"
#include "core/job.h"
#include "core/pidfd.h"

namespace nodus::backend::local {
namespace {

namespace bp = boost::process::v2;
using bp::error_code;

// What went wrong in the child before exec, sent to the parent on the report pipe.
enum class Step : int {
  kCgroup = 1,
  kAffinity,
  kSession,
  kParentDeath,
  kSupervisorGone,
  kSignals,
  kStdio,
  kChdir
};

const char* step_text(Step s) {
  switch (s) {
    case Step::kCgroup:
      return "joining the job's cgroup";
    case Step::kAffinity:
      return "sched_setaffinity to the job's CPUs";
    case Step::kSession:
      return "setsid";
    case Step::kParentDeath:
      return "prctl(PR_SET_PDEATHSIG)";
    case Step::kSupervisorGone:
      return "supervisor exited during start";
    case Step::kSignals:
      return "resetting signals";
    case Step::kStdio:
      return "redirecting stdin/stdout/stderr";
    case Step::kChdir:
      return "chdir to the workdir";
  }
  return "setup";
}

struct Report {
  Step step;
  int err;
};

// Runs in the child between vfork and exec, in the parent's memory: async-signal-safe calls
// on its own values only, no allocation, no locks.
struct ChildSetup {
  pid_t supervisor = 0;
  int null_fd = -1, out_fd = -1, err_fd = -1;
  const char* workdir = nullptr;  // nullptr: stay
  int report_fd = -1;
  int cgroup_fd = -1;
  const cpu_set_t* cpus = nullptr;  // nullptr: keep nodus's affinity

  [[noreturn]] void fail(Step step) const {
    Report r{step, errno};
    ssize_t ignored = ::write(report_fd, &r, sizeof r);
    (void)ignored;
    ::_exit(125);
  }

  template <typename Launcher>
  error_code on_exec_setup(Launcher& launcher, const std::filesystem::path&, const char* const*&) {
    if (cgroup_fd >= 0 && ::write(cgroup_fd, "0", 1) != 1) fail(Step::kCgroup);
    if (cpus != nullptr && ::sched_setaffinity(0, sizeof(cpu_set_t), cpus) != 0)
      fail(Step::kAffinity);
    if (::setsid() < 0) fail(Step::kSession);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(Step::kParentDeath);
    // The supervisor may have died before the prctl: then nothing would ever kill us.
    if (::getppid() != supervisor) fail(Step::kSupervisorGone);

    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);  // glibc's own: EINVAL
    sigset_t none;
    sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) fail(Step::kSignals);

    if (::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
        ::dup2(err_fd, STDERR_FILENO) < 0)
      fail(Step::kStdio);
    if (workdir != nullptr && ::chdir(workdir) != 0) fail(Step::kChdir);

    // Close everything but 0-2 and the launcher's whitelist (its errno pipe).
    unsigned low = 3;
    for (;;) {
      int next = -1;  // the smallest whitelisted descriptor >= low
      for (int fd : launcher.fd_whitelist)
        if (fd >= static_cast<int>(low) && (next < 0 || fd < next)) next = fd;
      if (next < 0) {
        ::syscall(SYS_close_range, low, ~0U, 0);
        break;
      }
      if (static_cast<unsigned>(next) > low) ::syscall(SYS_close_range, low, next - 1U, 0);
      low = static_cast<unsigned>(next) + 1;
    }
    return {};
  }

  template <typename Launcher>
  void on_exec_error(Launcher&, const std::filesystem::path&, const char* const*&,
                     const error_code&) {
    ::_exit(127);  // the launcher has already sent errno to the parent
  }
  template <typename Launcher>
  void on_exec_error(Launcher&, const error_code&, const std::filesystem::path&,
                     const char* const*&, const error_code&);
};

Error exec_error(const std::string& command, int err) {
  std::string why = std::strerror(err);
  if (!why.empty()) why[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(why[0])));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Error::permanent("command not found: '" + command + "' (" + why + ")", 127);
    case EACCES:
    case EPERM:
    case ENOEXEC:
    case EISDIR:
    case ETXTBSY:
    case ELIBBAD:
      return Error::permanent("cannot run '" + command + "': " + why, 126);
    default:
      return Error::permanent("cannot start '" + command + "': " + why, 125);
  }
}

void reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// A descriptor of at least 3, so that the child's dup2 onto 0-2 never clobbers it.
int above_stdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Every signal blocked while it lives: none may run a handler of nodus's in the vforked child,
// in nodus's memory, before ChildSetup resets the handlers and unblocks them.
struct SignalsBlocked {
  sigset_t saved;
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  }
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &saved, nullptr); }
};

}  // namespace

Result<Launched> launch(const LaunchRequest& request) {
  if (request.argv.empty()) return Error::permanent("empty command", 125);
  const std::string& command = request.argv[0];
  auto exe = resolve_executable(command, env_value(request.env, "PATH"), request.workdir);
  if (!exe.ok()) return exe.error();
  if (!request.workdir.empty()) {
    struct stat st;
    if (::stat(request.workdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Error::permanent("workdir '" + request.workdir + "': no such directory", 125);
  }

  std::vector<const char*> argv;
  for (const std::string& a : request.argv) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  std::vector<const char*> envp;
  for (const std::string& e : request.env) envp.push_back(e.c_str());
  envp.push_back(nullptr);

  Fd null_fd{above_stdio(::open("/dev/null", O_RDONLY | O_CLOEXEC))};
  int report[2];
  if (null_fd.fd < 0 || ::pipe2(report, O_CLOEXEC) != 0)
    return Error::permanent(std::string("cannot start '") + command + "': " + std::strerror(errno),
                            125);
  Fd report_read{report[0]};
  Fd report_write{report[1]};

  ChildSetup setup;
  setup.supervisor = ::getpid();
  setup.null_fd = null_fd.fd;
  setup.out_fd = request.stdout_fd;
  setup.err_fd = request.stderr_fd;
  setup.workdir = request.workdir.empty() ? nullptr : request.workdir.c_str();
  setup.report_fd = report_write.fd;
  setup.cgroup_fd = request.cgroup_procs_fd;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : request.cpus) {
    if (c < 0 || c >= CPU_SETSIZE)
      return Error::permanent("cannot start '" + command + "': CPU " + std::to_string(c) +
                                  " is beyond what sched_setaffinity takes",
                              125);
    CPU_SET(c, &cpus);
  }
  if (!request.cpus.empty()) setup.cpus = &cpus;

  // A fresh io_context per launch: the launcher notifies it around fork, and one that never
  // registered a descriptor has nothing to re-create in the child.
  boost::asio::io_context context;
  bp::posix::vfork_launcher launcher;
  launcher.env = envp.data();
  error_code ec;
  Launched out;
  out.started_at = unix_now();
  try {
    SignalsBlocked blocked;
    auto process =
        launcher(context.get_executor(), ec, std::filesystem::path(*exe), argv.data(), setup);
    if (!ec) process.detach();
  } catch (const std::exception& e) {
    if (launcher.pid > 0) {
      ::kill(launcher.pid, SIGKILL);
      reap(launcher.pid);
    }
    return Error::permanent("cannot start '" + command + "': " + e.what(), 125);
  }
  ::close(report_write.fd);
  report_write.fd = -1;
  if (launcher.pid <= 0)
    return Error::permanent("cannot start '" + command + "': fork: " + ec.message(), 125);

  Report r{};
  ssize_t n;
  do {
    n = ::read(report_read.fd, &r, sizeof r);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof r)) {
    reap(launcher.pid);
    return Error::permanent(
        "cannot start '" + command + "': " + step_text(r.step) + ": " + std::strerror(r.err), 125);
  }
  if (ec) {
    reap(launcher.pid);
    return exec_error(command, ec.value());
  }
  out.pid = launcher.pid;
  out.pidfd = pidfd_open(out.pid);
  if (out.pidfd < 0) {
    int err = errno;
    ::kill(out.pid, SIGKILL);
    reap(out.pid);
    return Error::permanent("cannot watch '" + command + "': pidfd_open: " + std::strerror(err),
                            125);
  }
  return out;
}

}  // namespace nodus::backend::local
