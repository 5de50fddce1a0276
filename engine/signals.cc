#include "engine/signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <stdexcept>

namespace nodus::engine {

SignalWatch::SignalWatch() {
  // Not restored by the destructor: the end-of-job lines still go to a stdout that may be gone.
  // SIGTSTP (Ctrl-Z), SIGTTIN, SIGTTOU too: a stopped supervisor is what a job attacking
  // nodus does, and its sentinel kills the job after kSupervisorStoppedLimit (sentinel.h), so
  // nodus never stops of its own accord while it watches a job.
  for (int sig : {SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU})
    std::signal(sig, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
}

SignalWatch::~SignalWatch() {
  if (fd_ >= 0) close(fd_);
}

std::optional<int> SignalWatch::take() {
  signalfd_siginfo info;
  ssize_t n = read(fd_, &info, sizeof info);
  if (n != static_cast<ssize_t>(sizeof info)) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

}  // namespace nodus::engine
