#include "backend/local/local_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "backend/local/cgroup.h"
#include "backend/local/container.h"
#include "backend/local/cpuset.h"
#include "backend/local/gpu_holders.h"
#include "backend/local/launch.h"
#include "backend/local/output.h"
#include "backend/local/process_tree.h"
#include "backend/local/sentinel.h"
#include "core/config.h"
#include "core/files.h"
#include "core/helper_children.h"
#include "core/lifecycle.h"
#include "core/timing.h"

namespace nodus::backend {
namespace {

using namespace local;  // NOLINT: this file is the local backend
using Clock = std::chrono::steady_clock;

constexpr auto kEngineProbeTimeout = std::chrono::seconds(5);
constexpr auto kKillLimit = std::chrono::seconds(60);
// How long a SIGKILL through cgroup.kill waits to see the cgroup empty, to date the job's end:
// the kernel takes milliseconds; past this the end is when the main process was reaped.
constexpr auto kKillDoneWait = std::chrono::milliseconds(500);
// What is left in the pipes when the main process exits is read without waiting for more:
// descendants may keep them open and keep writing. The bound is in bytes first; the time bound
// only stops a descendant that keeps them full, and is long enough that a loaded machine does
// not lose the job's last lines (its final figures, its error), which are what is left there.
constexpr auto kDrainTime = std::chrono::seconds(2);
constexpr size_t kDrainBytes = 16u << 20;

struct LocalJob {
  pid_t pid = -1;
  int pidfd = -1;
  double started_at = 0;
  std::unique_ptr<OutputPump> output;
  std::optional<Outcome> outcome;  // set once the main process is reaped
  // kill() found nothing of the tree left. signal() may run on another thread (the supervisor's
  // watchdog); signal_mu orders it with kill()'s end (sentinel dismissed, cgroup removed).
  bool finished = false;
  std::mutex signal_mu;
  std::optional<ContainerEngine> engine;
  std::string container_name;
  std::string container_cgroup;  // --cgroup-parent, "" when none (container.h)
  std::vector<std::string> env;
  Sentinel sentinel;                // kills the tree if this supervisor dies first or is late
  bool sentinel_lost = false;       // it died while the job ran: reaped, no longer watched
  std::string end_path;             // the sentinel's end-time file (core/job.h), "" when none
  std::string tampered;             // what the sentinel's news said, once
  bool tamper_reported = false;     // as a kTampered event: not again with the exit
  std::optional<double> killed_at;  // when the sentinel's kill found the tree dead
  // When this process's own SIGKILL found the job's cgroup empty (unix seconds, 0: not yet):
  // set by the watchdog thread, read when the exit is reported.
  std::atomic<double> own_kill_done{0};
  JobCgroup cgroup;  // valid() when the job is contained by a cgroup

  ~LocalJob() {
    if (pidfd >= 0) ::close(pidfd);
  }
};

timespec until(SteadyTime deadline) {
  auto left = std::max(deadline - Clock::now(), Clock::duration::zero());
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

class LocalBackend final : public Backend {
 public:
  LocalBackend() {
    // Orphaned descendants of jobs reparent to us instead of init: kill_tree can find them.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }

  ~LocalBackend() override {
    for (auto& [pid, job] : jobs_) {
      if (job->finished) continue;
      if (job->cgroup.valid()) (void)job->cgroup.kill(std::chrono::seconds(10));
      (void)kill_tree(pid, std::chrono::seconds(10), {});
      dismiss_sentinel(job->sentinel);
      if (job->cgroup.valid()) (void)job->cgroup.remove();
      unregister_tree(pid);
    }
  }

  std::string_view name() const override { return "local"; }

  Result<void> submit(JobRecord& job, const LaunchSpec& spec) override;
  Result<Event> wait(JobRecord& job, SteadyTime deadline, int wake_fd) override;
  Result<void> signal(JobRecord& job, int sig) override;
  bool concurrent_signal_safe() const override { return true; }
  Result<void> kill(JobRecord& job) override;
  Result<void> arm_deadline(JobRecord& job, SteadyTime term_at, SteadyTime kill_at) override;

 private:
  // Reads what the sentinel's socket holds (sentinel.h); true once the job was tampered with
  // (j.tampered says how). A sentinel found gone is reaped and no longer watched.
  bool take_sentinel_news(LocalJob& j);
  // Kills the tree: cgroup.kill where the job has a cgroup, then the /proc sweep that also
  // reaps the zombies that are our children (and is the whole mechanism without a cgroup).
  Result<void> kill_job(LocalJob& j, std::chrono::milliseconds limit);
  Result<LocalJob*> find(const JobRecord& job);
  void record_exit(LocalJob& j, int status);

  std::mutex mu_;  // guards jobs_ (the map); each job is used by one thread at a time
  std::map<pid_t, std::unique_ptr<LocalJob>> jobs_;
};

Result<void> LocalBackend::submit(JobRecord& job, const LaunchSpec& spec) {
  if (job.argv.empty()) return Error::permanent("empty command: nothing to run", 125);
  auto j = std::make_unique<LocalJob>();
  const std::string token = new_tree_token();
  auto overrides = spec.env;
  overrides[kTreeTokenEnv] = token;
  std::vector<std::string> env = merged_environment(overrides);
  std::vector<std::string> argv = job.argv;
  std::string container_dir;  // the workdir mounted into the container, with --image

  if (!job.image.empty()) {
    auto engine = find_container_engine(job.image, env, kEngineProbeTimeout);
    if (!engine.ok()) return engine.error();
    if (auto image = check_image(*engine, job.image, env, kEngineProbeTimeout); !image.ok())
      return image.error();
    if (auto runtime = check_runtime(*engine, job.image, env, kEngineProbeTimeout); !runtime.ok())
      return runtime.error();
    std::error_code ec;
    std::filesystem::path dir = job.workdir.empty() ? std::filesystem::current_path(ec)
                                                    : std::filesystem::absolute(job.workdir, ec);
    if (ec) return Error::permanent("--image " + job.image + ": workdir: " + ec.message(), 125);
    j->container_name = "nodus-" + token;
    container_dir = dir.lexically_normal().string();
    j->engine = *engine;
    j->env = env;
  }

  int log_fd = -1;
  if (!spec.log_path.empty()) {
    // A new file, never through a symlink planted at its name (core/files.h).
    auto created = create_new_file(spec.log_path, 0600, O_APPEND);
    if (!created.ok()) return created.error();
    log_fd = *created;
  }
  // $NODUS_METRICS, made here as a new regular file: a link planted at its name (by a job of an
  // earlier id, say) is removed, so the job never writes its metrics through it.
  if (!job.metrics_path.empty()) {
    struct stat st {};
    if (::lstat(job.metrics_path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      ::unlink(job.metrics_path.c_str());
    if (auto made = create_new_file(job.metrics_path, 0600, O_APPEND); made.ok()) ::close(*made);
  }
  // Which bytes of the log are stdout and which stderr (log_streams.h); optional: a job whose
  // index cannot be made still runs, `logs --stream` then says there is none.
  int index_fd = -1;
  if (log_fd >= 0) {
    auto index = create_new_file(stream_index_path(spec.log_path), 0600);
    if (index.ok()) index_fd = *index;
  }
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1], log_fd, index_fd})
      if (fd >= 0) ::close(fd);
    return Error::permanent(std::string("cannot create output pipes: ") + std::strerror(e), 125);
  }
  std::string why_no_cgroup;
  if (auto parent = cgroup_parent(&why_no_cgroup)) {
    auto made = JobCgroup::create(*parent, "job-" + token);
    if (made.ok())
      j->cgroup = std::move(*made);
    else
      why_no_cgroup = made.error().message;
  }
  // Disjoint CPUs for jobs that share the host's GPUs (cpuset.h).
  std::vector<int> cpus;
  std::string cpu_note;
  if (!job.gpu_indices.empty() && config_get("cpusets") != "off") {
    // --cpus-per-gpu travels in the job's options (engine/supervise_options.h).
    std::optional<int> per_gpu;
    if (job.options->contains("cpus_per_gpu") && (*job.options)["cpus_per_gpu"].is_number_integer())
      per_gpu = (*job.options)["cpus_per_gpu"].get<int>();
    auto plan = plan_cpus(detect_topology(), job.gpu_indices, per_gpu);
    if (!plan.ok()) {
      for (int fd : {out[0], out[1], err[0], err[1], log_fd})
        if (fd >= 0) ::close(fd);
      if (j->cgroup.valid()) (void)j->cgroup.remove();
      return plan.error();
    }
    cpus = plan->cpus;
    cpu_note = plan->note;
    if (cpus.empty() && !cpu_note.empty()) add_note(job, cpu_note);
  }
  std::map<std::string, std::string> cpu_env;
  if (!cpus.empty()) {
    cpu_env = cpu_environment(cpus, env);
    for (const auto& [k, v] : cpu_env) {
      std::string entry = k + "=" + v;
      auto same = [&k](const std::string& e) { return e.rfind(k + "=", 0) == 0; };
      auto it = std::find_if(env.begin(), env.end(), same);
      if (it != env.end())
        *it = entry;
      else
        env.push_back(entry);
    }
    std::string how = "sched_setaffinity";
    if (j->cgroup.valid()) {
      auto confined = j->cgroup.restrict_cpus(format_cpu_list(cpus));
      how = confined.ok() ? "cgroup cpuset" : "sched_setaffinity; " + confined.error().message;
    }
    if (j->engine) how = "--cpuset-cpus";  // the container's processes are not the client's
    add_note(job, cpu_note + " by " + how);
    (*job.options)["cpus"] = static_cast<int>(cpus.size());  // for the end-of-job workers check
  }
  // The container's processes go into the job's cgroup (container.h), so the argv waits for it,
  // and get the job's CPUs and the variables that go with them.
  if (j->engine) {
    j->container_cgroup = container_cgroup_parent(j->cgroup.path());
    std::map<std::string, std::string> container_env = spec.env;
    for (const auto& [k, v] : cpu_env) container_env[k] = v;
    argv = container_run_argv(*j->engine, j->container_name, job, container_env, container_dir,
                              j->container_cgroup, cpus);
  }
  add_note(job, j->cgroup.valid() ? kContainedByCgroup + j->cgroup.path()
                                  : "contained by process group, session and /proc scan (no "
                                    "cgroup: " +
                                        why_no_cgroup + ")");
  timing::step("files, pipes and cgroup made");
  if (spec.before_start) spec.before_start(job);
  // The sentinel first: a supervisor killed between the launch and the sentinel's fork would
  // leave the job's children with no enforcer until the next nodus command (seen under ASan).
  // Where the sentinel says when it killed the job, should this process die (core/job.h).
  int end_fd = -1;
  if (!spec.log_path.empty()) {
    auto end = create_new_file(end_time_path(spec.log_path), 0600);
    if (end.ok()) end_fd = *end;
  }
  j->sentinel = start_sentinel({0, token, j->cgroup.path(), end_fd, j->engine.has_value()});
  if (end_fd >= 0) ::close(end_fd);
  timing::step("sentinel started");
  j->end_path = spec.log_path.empty() ? "" : end_time_path(spec.log_path);
  // With --cgroup-parent the engine's client (and the conmon it starts) stay outside the job's
  // cgroup and only the container's processes are in it: a cgroup.kill (the sentinel's, when
  // this process is SIGKILLed) then leaves conmon alive to see the container end and run
  // podman's --rm cleanup, instead of a stale "Up" container in `podman ps -a`.
  const int procs_fd = j->container_cgroup.empty() ? j->cgroup.procs_fd() : -1;
  auto launched = launch({argv, env, job.workdir, out[1], err[1], procs_fd, std::move(cpus)});
  timing::step("command exec'd");
  ::close(out[1]);
  ::close(err[1]);
  if (!launched.ok()) {
    dismiss_sentinel(j->sentinel);
    for (int fd : {out[0], err[0], log_fd, index_fd})
      if (fd >= 0) ::close(fd);
    if (j->cgroup.valid()) (void)j->cgroup.remove();
    return launched.error();
  }
  register_tree(launched->pid, token);
  (void)tell_sentinel_job(j->sentinel, launched->pid);
  j->pid = launched->pid;
  j->pidfd = launched->pidfd;
  j->started_at = launched->started_at;
  // What --log-limit dropped (log_streams.h); without one, a limit still bounds the disk.
  int gap_fd = -1;
  if (log_fd >= 0 && spec.log_limit > 0) {
    auto gap = create_new_file(log_gap_path(spec.log_path), 0600);
    if (gap.ok()) gap_fd = *gap;
  }
  j->output = std::make_unique<OutputPump>(out[0], err[0], log_fd, spec.attach, spec.on_line,
                                           index_fd, spec.log_limit, gap_fd);
  job.backend_id = std::to_string(j->pid);
  job.started_at = j->started_at;
  std::lock_guard lock(mu_);
  jobs_[j->pid] = std::move(j);
  return {};
}

Result<LocalJob*> LocalBackend::find(const JobRecord& job) {
  std::lock_guard lock(mu_);
  try {
    auto it = jobs_.find(static_cast<pid_t>(std::stol(job.backend_id)));
    if (it != jobs_.end()) return it->second.get();
  } catch (const std::exception&) {
  }
  return Error::permanent("job " + std::to_string(job.id) + " (backend id '" + job.backend_id +
                              "') was not started by this nodus process",
                          125);
}

void LocalBackend::record_exit(LocalJob& j, int status) {
  Outcome o;
  if (WIFSIGNALED(status)) {
    o.signal = WTERMSIG(status);
    o.exit_code = 128 + *o.signal;
  } else {
    o.exit_code = WEXITSTATUS(status);
  }
  o.started_at = j.started_at;
  o.ended_at = unix_now();
  j.outcome = o;
  mark_main_reaped(j.pid);
  j.output->drain_and_close(Clock::now() + kDrainTime, kDrainBytes);
  if (j.pidfd >= 0) ::close(j.pidfd);
  j.pidfd = -1;
}

Result<Event> LocalBackend::wait(JobRecord& job, SteadyTime deadline, int wake_fd) {
  auto found = find(job);
  if (!found.ok()) return found.error();
  LocalJob& j = **found;
  for (;;) {
    if (j.outcome) {
      // A sentinel that killed the job for a stopped supervisor said so before the kill.
      if (j.tampered.empty() && !j.sentinel_lost) (void)take_sentinel_news(j);
      Event e;
      e.kind = Event::Kind::kExited;
      e.started_at = j.started_at;
      e.outcome = *j.outcome;
      if (!j.tamper_reported) e.outcome.tampered = j.tampered;
      // Killed by the sentinel while this process was stopped: it ended then, not when it was
      // reaped (the bill is for what ran).
      if (j.killed_at && *j.killed_at < e.outcome.ended_at)
        e.outcome.ended_at = std::max(*j.killed_at, e.outcome.started_at);
      // Killed by this process: its tree was dead when its cgroup emptied, which may be well
      // before the main loop reaped it on a loaded machine; billed to then, however late.
      if (const double done = j.own_kill_done.load(); done > 0 && done < e.outcome.ended_at)
        e.outcome.ended_at = std::max(done, e.outcome.started_at);
      return e;
    }
    const bool watch_sentinel = j.sentinel.fd >= 0 && !j.sentinel_lost;
    pollfd fds[5] = {{j.pidfd, POLLIN, 0},
                     {j.output->fd(OutputPump::kStdout), POLLIN, 0},
                     {j.output->fd(OutputPump::kStderr), POLLIN, 0},
                     {wake_fd, POLLIN, 0},
                     {watch_sentinel ? j.sentinel.fd : -1, POLLIN, 0}};
    timespec ts = until(deadline);
    if (::ppoll(fds, 5, &ts, nullptr) < 0) {
      if (errno == EINTR) continue;
      return Error::permanent(std::string("waiting for job: ppoll: ") + std::strerror(errno));
    }
    if (fds[4].revents != 0 && take_sentinel_news(j) && !j.outcome) {
      // The job is still running and nothing else watches it: kill it now, before whatever
      // killed the sentinel can stop this process too.
      if (j.cgroup.valid()) cgroup_kill_path(j.cgroup.path());
      signal_tree(j.pid, SIGKILL);
      j.tamper_reported = true;
      Event e{Event::Kind::kTampered, j.started_at, {}, j.tampered};
      return e;
    }
    if (fds[1].revents != 0) j.output->read_available(OutputPump::kStdout);
    if (fds[2].revents != 0) j.output->read_available(OutputPump::kStderr);
    if (fds[0].revents != 0) {
      int status = 0;
      pid_t r;
      do {
        r = ::waitpid(j.pid, &status, WNOHANG);
      } while (r < 0 && errno == EINTR);
      if (r == j.pid) {
        record_exit(j, status);
        continue;
      }
      if (r < 0)
        return Error::permanent("lost the exit status of job process " + std::to_string(j.pid) +
                                ": " + std::strerror(errno) + " (is SIGCHLD ignored?)");
    }
    if (fds[3].revents != 0) return Event{Event::Kind::kWoken, j.started_at, {}, ""};
    if (Clock::now() >= deadline) return Event{Event::Kind::kDeadline, j.started_at, {}, ""};
  }
}

bool LocalBackend::take_sentinel_news(LocalJob& j) {
  SentinelNews news = read_sentinel(j.sentinel);
  if (news.killed_at) j.killed_at = news.killed_at;
  if (news.killed_for_stopped_supervisor && j.tampered.empty())
    j.tampered = "tampering: nodus's supervisor (pid " + std::to_string(::getpid()) +
                 ") was stopped for " +
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    *news.killed_for_stopped_supervisor)
                                    .count()) +
                 " ms while the job ran; its sentinel killed the job";
  if (news.gone) {
    // It exits only when dismissed: something killed it. Reap it and stop watching.
    std::lock_guard lock(j.signal_mu);
    if (j.tampered.empty() && !j.outcome)
      j.tampered = "tampering: the job's sentinel (pid " + std::to_string(j.sentinel.pid) +
                   ") was killed while the job ran; the job was killed at once";
    ::close(j.sentinel.fd);
    while (::waitpid(j.sentinel.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    unregister_helper_child(j.sentinel.pid);
    j.sentinel = {};
    j.sentinel_lost = true;
  }
  return !j.tampered.empty();
}

Result<void> LocalBackend::signal(JobRecord& job, int sig) {
  auto found = find(job);
  if (!found.ok()) return found.error();
  LocalJob& j = **found;
  std::lock_guard lock(j.signal_mu);
  if (j.finished) return {};
  // Told first, so that the sentinel's own TERM (kSentinelTermLag after the deadline) does not
  // double this one while this one is on its way.
  if (sig == SIGTERM) (void)tell_sentinel_term_sent(j.sentinel);
  int reached = 0;
  if (sig != SIGKILL && j.engine) {
    // The engine's client hands it on to the container's main process, as `docker stop` does.
    // Not the tree as well: the container's processes are in it (conmon is reparented to this
    // subreaper), and the main process would have the signal twice.
    reached = ::kill(j.pid, sig) == 0 ? 1 : 0;
  } else {
    if (j.cgroup.valid())
      reached += sig == SIGKILL ? cgroup_kill_path(j.cgroup.path()) : j.cgroup.signal(sig);
    // Any other signal reaches each process once: where the cgroup's processes had it (every
    // process of a job outside a container), the tree does not get it again.
    if (sig == SIGKILL || reached == 0) reached += signal_tree(j.pid, sig);
  }
  // The moment the tree was dead is the end of what it ran (and of its bill): the cgroup says
  // when it is empty, within milliseconds of cgroup.kill.
  if (sig == SIGKILL && j.cgroup.valid() && j.own_kill_done.load() == 0 &&
      cgroup_wait_empty_path(j.cgroup.path(), kKillDoneWait))
    j.own_kill_done = unix_now();
  if (reached == 0 && !process_gone(j.pid))
    return Error::retryable("signal " + std::to_string(sig) + " reached no process of job " +
                            std::to_string(j.pid));
  return {};
}

Result<void> LocalBackend::arm_deadline(JobRecord& job, SteadyTime term_at, SteadyTime kill_at) {
  auto found = find(job);
  if (!found.ok()) return found.error();
  if ((*found)->finished) return {};
  if (!arm_sentinel((*found)->sentinel, term_at, kill_at))
    return Error::retryable(
        "the job's sentinel is gone: only the supervisor enforces its deadline");
  return {};
}

Result<void> LocalBackend::kill_job(LocalJob& j, std::chrono::milliseconds limit) {
  std::optional<Error> cgroup_error;
  if (j.cgroup.valid()) {
    auto killed = j.cgroup.kill(limit);
    if (!killed.ok()) cgroup_error = killed.error();
  }
  auto swept = kill_tree(j.pid, limit, [&](pid_t pid, int status) {
    if (pid == j.pid && !j.outcome) record_exit(j, status);
  });
  if (cgroup_error) return *cgroup_error;
  return swept;
}

Result<void> LocalBackend::kill(JobRecord& job) {
  if (job.backend_id.empty()) return {};  // never started: nothing to kill
  auto found = find(job);
  if (!found.ok()) return found.error();
  LocalJob& j = **found;
  if (j.finished) return {};
  // The kernel's kill first where the container is in the job's cgroup: it ends the job's
  // processes, and dates the end of its bill, at once. The engine's `kill` starts a client
  // first, hundreds of ms on a loaded machine with the job running and billed all along (a
  // cost cap's kill ran 0.5 s past the cap that way); it and `rm` are then cleanup.
  if (j.engine && j.cgroup.valid()) (void)signal(job, SIGKILL);
  if (j.engine) kill_container(*j.engine, j.container_name, j.env);
  if (j.outcome && (job.gpu_count > 0 || !job.gpu_indices.empty())) {
    // The main process is gone; whatever of its tree still holds a GPU is a leftover.
    add_note(job, kill_gpu_holders(j.pid));
  }
  auto killed = kill_job(j, kKillLimit);
  if (j.engine) {
    remove_container(*j.engine, j.container_name, j.env);
    remove_container_cgroups(j.container_cgroup);
  }
  if (!killed.ok()) return killed;
  std::lock_guard lock(j.signal_mu);
  dismiss_sentinel(j.sentinel);
  if (!j.end_path.empty()) ::unlink(j.end_path.c_str());  // this process records the end itself
  if (j.cgroup.valid()) {
    const CgroupUsage u = j.cgroup.usage();
    std::string line = "cgroup";
    char buf[96];
    if (u.cpu_seconds) {
      std::snprintf(buf, sizeof buf, " cpu %.2f s", *u.cpu_seconds);
      line += buf;
    }
    if (u.memory_peak) {
      std::snprintf(buf, sizeof buf, ", memory peak %.1f MiB", *u.memory_peak / 1048576.0);
      line += buf;
    }
    auto removed = j.cgroup.remove();
    if (!removed.ok()) line += "; " + removed.error().message;
    if (line != "cgroup") add_note(job, line);
  }
  j.finished = true;
  unregister_tree(j.pid);
  return {};
}

}  // namespace

std::unique_ptr<Backend> make_local_backend() { return std::make_unique<LocalBackend>(); }

}  // namespace nodus::backend
