// SlurmBackend: submit, watch, signal and cancel jobs through slurmrestd (see backend.h for the
// contract). Caps are the engine's: it calls signal()/kill() at the exact deadline; the Slurm
// time limit sent with the job (job_script.h) is the safety net for when nodus is gone.

#include "backend/slurm/slurm_backend.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <thread>

#include "backend/slurm/api.h"
#include "backend/slurm/job_script.h"
#include "backend/slurm/job_states.h"
#include "backend/slurm/output_follower.h"
#include "backend/slurm/rest.h"
#include "billing/catalog.h"
#include "core/error.h"
#include "core/lifecycle.h"

namespace nodus::backend::slurm {
namespace {

using Clock = std::chrono::steady_clock;

// True if fd becomes readable before `until` (false at once for fd < 0 once `until` passed).
bool readable_before(int fd, Clock::time_point until) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
  int timeout = static_cast<int>(std::max<int64_t>(0, left.count()));
  if (fd < 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout));
    return false;
  }
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

// The folder for scripts' output: created open to all (1777) so that whatever user the jobs
// run as can write there. Best effort: on a remote cluster it is the cluster's folder.
void ensure_workdir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) return;
  std::string partial;
  for (size_t at = 1; at != std::string::npos;) {
    at = dir.find('/', at + 1);
    partial = dir.substr(0, at);
    if (mkdir(partial.c_str(), 0755) != 0) continue;
    if (at == std::string::npos) chmod(partial.c_str(), 01777);
  }
}

Event event_of(Event::Kind kind, double started_at = 0) {
  Event e;
  e.kind = kind;
  e.started_at = started_at;
  return e;
}

const SlurmJob* record_of(const std::vector<SlurmJob>& records, int64_t id) {
  for (const auto& r : records)
    if (r.job_id == id) return &r;
  return nullptr;
}

// Whether Slurm's record `r` (found by the job's id) is this nodus job. The name nodus gave it
// says so, but the job can rename itself (`scontrol update name=...`); its output file, which
// Slurm does not let a running job change, still names it; and where a record carries neither
// (accounting), a submit within two minutes of the job's creation. What the name check is for
// stays: an id that is another job's after the cluster's state was reset.
bool same_job(const SlurmJob& r, const JobRecord& job, const std::string& expected_name) {
  if (r.name.empty() || r.name == expected_name) return true;
  if (!r.standard_output.empty()) return r.standard_output == job.log_path;
  return r.submit_time > 0 && std::fabs(r.submit_time - job.created_at) <= 120;
}

// Said once in the job's note when it no longer bears the name nodus gave it.
std::string renamed_note(const SlurmJob& r) {
  return "the job renamed itself in Slurm to '" + r.name + "'";
}

double cost_of(const JobRecord& job, double seconds) {
  return billing::cost_usd(job.gpu_count, job.rate_per_gpu_hour, std::max(0.0, seconds));
}

// A job Slurm ended, as its last record and every run have it: its state (Slurm's, or the stop
// nodus planned), times, exit code and bill, and a note when Slurm's own time limit ended it.
// The one place refresh and the bill from accounting record an end.
// `held_until`: the end of a job killed while suspended (end_held_while_suspended), which its
// last run is billed to instead of slurmctld's end.
void record_end(JobRecord& job, const SlurmJob& last, std::vector<RunSegment> segments,
                std::optional<double> held_until = std::nullopt) {
  Outcome o = outcome_of(last);
  std::string note;
  if (held_until && !segments.empty()) {
    char line[300];
    std::snprintf(line, sizeof line,
                  "ended while suspended: Slurm records its end at its suspension, %.0f s before "
                  "its processes were gone, but a suspended job keeps its GPUs until it ends: "
                  "billed to its last step's end in Slurm's accounting",
                  *held_until - segments.back().end);
    note = line;
    segments.back().end = *held_until;
    o.ended_at = *held_until;
  }
  end_job(job, {final_state_of(last, job), o.ended_at, o.exit_code, note});
  job.started_at = segments.empty() ? o.started_at : segments.front().start;
  job.signal = o.signal;
  job.cost = cost_of(job, segments.empty() ? o.ended_at - o.started_at : total_seconds(segments));
  if (auto why = stopped_by_time_limit(last, job); !why.empty()) add_note(job, why);
}

class SlurmBackend final : public Backend {
 public:
  SlurmBackend(std::unique_ptr<RestClient> client, WaitTiming timing)
      : client_(std::move(client)), timing_(timing) {}

  std::string_view name() const override { return "slurm"; }

  Result<void> submit(JobRecord& job, const LaunchSpec& spec) override;
  Result<Event> wait(JobRecord& job, SteadyTime deadline, int wake_fd) override;
  Result<void> signal(JobRecord& job, int sig) override;
  Result<void> kill(JobRecord& job) override;
  Result<bool> refresh(JobRecord& job) override;
  std::string metrics_path(const JobRecord& job) override {
    auto rest = client();  // unconfigured: submit() says why; the job's own path meanwhile
    return rest ? slurm::metrics_path((*rest)->settings(), job) : job.metrics_path;
  }

 private:
  // What wait() keeps between calls for one job.
  struct Watch {
    std::unique_ptr<OutputFollower> output;
    Clock::time_point next_poll{};
    std::chrono::milliseconds interval{0};
    std::optional<Clock::time_point> failing_since;
    std::string last_error;
    std::optional<SlurmJob> final_record;  // seen, not yet reported (kStarted went first)
    bool outage_reported = false;          // the current outage was reported once already
    std::optional<Clock::time_point> check_duplicates_until;  // after a submit answer was lost
    std::optional<std::string> queue_reason;  // the last kQueued reported (none while running)
    Clock::time_point next_duplicate_check{};
    bool suspended = false;    // the last record seen before the final one was SUSPENDED
    double kill_sent_at = 0;   // when nodus's first cancel of the job was sent (unix seconds)
    double final_seen_at = 0;  // when the final record was first seen (unix seconds)
  };

  Result<RestClient*> client();
  Watch& watch_for(const JobRecord& job);
  // Stamps the moment nodus's first cancel of a job it watches went through.
  void note_kill_sent(const JobRecord& job);
  // The job's Slurm id: backend_id, or (when a crash came between insert and submit) the id of
  // the Slurm job with its name. nullopt when Slurm has no such job.
  Result<std::optional<int64_t>> slurm_id(RestClient& rest, JobRecord& job);
  Result<std::optional<SlurmJob>> find_by_name(RestClient& rest, const std::string& name,
                                               bool retry = true);
  // find_by_name, asked again with backoff while slurmrestd does not answer (up to lost_after).
  Result<std::optional<SlurmJob>> find_by_name_patiently(RestClient& rest, const std::string& name);
  // Cancels every live job named `name` but `keep` (a POST slurmrestd processed late).
  void cancel_duplicates(RestClient& rest, const std::string& name, int64_t keep);
  // Until Slurm reports the job ended: SIGKILL through the signal API and DELETE, asked again
  // with backoff through slurmrestd outages, up to lost_after. An answer that refuses the
  // credentials (401/403: the token expired) ends it at once: see token_rejected.
  Result<void> cancel_until_gone(RestClient& rest, JobRecord& job, int64_t id);
  // The error for a stop that slurmrestd refused for its credentials, the one line the
  // supervisor prints (once: a token does not come back to life, so every later stop fails the
  // same way, at once, and the supervisor does not say it again).
  Error token_rejected(const RestClient& rest, int64_t id);
  // The job's runs in Slurm's accounting, those named as nodus named it (an id Slurm gave again
  // after its state was reset is another job). Empty when accounting has none, or when the
  // cluster keeps no accounting: said once, and billing falls back to slurmctld's records.
  Result<std::vector<SlurmJob>> accounted_runs(RestClient& rest, const JobRecord& job, int64_t id,
                                               bool retry = true);
  // Bills `job` from Slurm's accounting alone, for a job slurmctld forgot (MinJobAge). False
  // when accounting has no finished run of it either.
  bool bill_from_accounting(JobRecord& job, const std::vector<SlurmJob>& runs);
  Event exited(JobRecord& job, Watch& watch, RestClient& rest, int64_t id);

  std::unique_ptr<RestClient> client_;
  WaitTiming timing_;
  std::map<int64_t, Watch> watches_;  // by nodus job id
  bool told_no_accounting_ = false;
  std::optional<Error> token_rejected_;  // set once slurmrestd refused the credentials to stop
};

Result<RestClient*> SlurmBackend::client() {
  if (!client_) {
    auto connected = connect_from_config();
    if (!connected) return connected.error();
    client_ = std::move(*connected);
  }
  return client_.get();
}

SlurmBackend::Watch& SlurmBackend::watch_for(const JobRecord& job) {
  auto [it, inserted] = watches_.try_emplace(job.id);
  if (inserted) it->second.output = std::make_unique<OutputFollower>(job.log_path, false, nullptr);
  return it->second;
}

Result<std::optional<SlurmJob>> SlurmBackend::find_by_name(RestClient& rest,
                                                           const std::string& name, bool retry) {
  auto all = rest.jobs(retry);
  if (!all) return all.error();
  std::optional<SlurmJob> newest;
  for (auto& j : *all)
    if (j.name == name && (!newest || j.job_id > newest->job_id)) newest = std::move(j);
  return newest;
}

Result<std::optional<int64_t>> SlurmBackend::slurm_id(RestClient& rest, JobRecord& job) {
  int64_t id = 0;
  const auto& s = job.backend_id;
  if (!s.empty()) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
    if (ec != std::errc() || end != s.data() + s.size() || id <= 0)
      return Error::permanent("job " + std::to_string(job.id) + ": invalid Slurm job id '" + s +
                              "'");
    return std::optional<int64_t>(id);
  }
  auto found = find_by_name(rest, slurm_job_name(job, rest.settings()));
  if (!found) return found.error();
  if (!*found) return std::optional<int64_t>();
  job.backend_id = std::to_string((*found)->job_id);
  if (job.log_path.empty()) job.log_path = output_path(rest.settings(), job);
  return std::optional<int64_t>((*found)->job_id);
}

Result<std::optional<SlurmJob>> SlurmBackend::find_by_name_patiently(RestClient& rest,
                                                                     const std::string& name) {
  auto delay = timing_.submit_backoff;
  auto give_up = Clock::now() + timing_.lost_after;
  bool told = false;
  for (;;) {
    auto found = find_by_name(rest, name, /*retry=*/false);
    if (found || !found.error().retryable() || Clock::now() >= give_up) {
      if (told && found) std::fprintf(stderr, "nodus: slurmrestd answers again\n");
      return found;
    }
    if (!told)  // one line per state change, not per attempt
      std::fprintf(stderr,
                   "nodus: cannot tell yet whether Slurm took the job (%s); asking again with "
                   "backoff before any new submit\n",
                   found.error().message.c_str());
    told = true;
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, timing_.max_backoff);
  }
}

void SlurmBackend::cancel_duplicates(RestClient& rest, const std::string& name, int64_t keep) {
  auto all = rest.jobs(/*retry=*/false);
  if (!all) return;  // asked again at the next poll while the window lasts
  for (const auto& j : *all)
    if (j.name == name && j.job_id != keep && phase_of(j.state) != Phase::kFinal) {
      std::fprintf(stderr, "nodus: cancelling Slurm job %lld, a second copy of %s\n",
                   static_cast<long long>(j.job_id), name.c_str());
      // A failed cancel is tried again at the next poll while the duplicate window lasts.
      if (auto cancelled = rest.cancel(std::to_string(j.job_id)); !cancelled)
        std::fprintf(stderr, "nodus: could not cancel Slurm job %lld yet: %s\n",
                     static_cast<long long>(j.job_id), cancelled.error().message.c_str());
    }
}

Result<void> SlurmBackend::submit(JobRecord& job, const LaunchSpec& spec) {
  auto rest = client();
  if (!rest) return rest.error();
  auto request = build_submit(job, spec, (*rest)->settings());
  if (!request) return request.error();
  ensure_workdir((*rest)->settings().workdir);

  // Exactly once: a POST whose answer was lost (timeout, slurmrestd stopped) may still have
  // created the job, so nothing is sent again before Slurm has answered that it has no job by
  // this name; a copy that a late-processed POST creates anyway is cancelled when seen.
  std::optional<int64_t> id;
  bool answer_lost = false;
  auto delay = timing_.submit_backoff;
  for (int attempt = 1; !id; ++attempt) {
    auto submitted = (*rest)->submit(*request);
    if (submitted) {
      id = *submitted;
      break;
    }
    if (!submitted.error().retryable())
      return Error::permanent("cannot submit the job to Slurm: " + submitted.error().message);
    // Never connected (no socket, connection refused): the POST reached nobody, so there is
    // nothing to look for; give up after the usual attempts.
    const std::string& why = submitted.error().message;
    if (why.find("does not exist") != std::string::npos ||
        why.find("Couldn't connect") != std::string::npos) {
      if (attempt >= timing_.submit_attempts)
        return Error::permanent("cannot submit the job to Slurm: " + why);
      std::this_thread::sleep_for(delay);
      delay *= 2;
      continue;
    }
    answer_lost = true;
    auto found = find_by_name_patiently(**rest, request->name);
    if (found && !*found) {
      // slurmrestd may still be working through the lost POST (it answers requests from a
      // thread pool): "no such job" must hold twice, a backoff apart, before a resend.
      std::this_thread::sleep_for(delay);
      found = find_by_name_patiently(**rest, request->name);
    }
    if (found && *found) {
      id = (*found)->job_id;
      break;
    }
    if (!found)
      return Error::permanent("cannot submit the job to Slurm, and cannot tell whether it took " +
                              request->name +
                              " (an earlier attempt may still run it): " + found.error().message);
    if (attempt >= timing_.submit_attempts)
      return Error::permanent("cannot submit the job to Slurm: " + submitted.error().message);
    std::this_thread::sleep_for(delay);
    delay *= 2;
  }
  job.backend_id = std::to_string(*id);
  job.log_path = request->output_path;
  if (job.workdir.empty()) job.workdir = request->working_dir;  // where Slurm runs it: show says
  if (auto m = request->env.find("NODUS_METRICS"); m != request->env.end())
    job.metrics_path = m->second;    // where the job writes them (job_script.h), and nodus reads
  if (!request->time_limit_minutes)  // once Slurm took it: a rejected job needs no warning
    std::fprintf(stderr, "nodus: warning: %s\n", std::string(kUnboundedWarning).c_str());
  Watch& w = watches_[job.id];
  w = Watch{};
  w.output = std::make_unique<OutputFollower>(job.log_path, spec.attach, spec.on_line);
  if (answer_lost) {
    cancel_duplicates(**rest, request->name, *id);
    w.check_duplicates_until = Clock::now() + timing_.duplicate_window;
  }
  return {};
}

Result<std::vector<SlurmJob>> SlurmBackend::accounted_runs(RestClient& rest, const JobRecord& job,
                                                           int64_t id, bool retry) {
  auto runs = rest.accounting(id, retry);
  if (!runs) return runs.error();
  if (!*runs) {
    if (!told_no_accounting_)
      std::fprintf(stderr,
                   "nodus: note: slurmrestd serves no accounting (no slurmdbd, or no "
                   "openapi/dbv0.0.38 plugin): Slurm jobs are billed from slurmctld's records, "
                   "which it forgets MinJobAge after a job ends, and a requeued job's earlier "
                   "runs are not billed\n");
    told_no_accounting_ = true;
    return std::vector<SlurmJob>{};
  }
  const std::string name = slurm_job_name(job, rest.settings());
  std::vector<SlurmJob> ours;
  for (auto& r : **runs)
    if (r.job_id == id && same_job(r, job, name)) ours.push_back(std::move(r));
  return ours;
}

bool SlurmBackend::bill_from_accounting(JobRecord& job, const std::vector<SlurmJob>& runs) {
  if (runs.empty() || phase_of(runs.back().state) != Phase::kFinal) return false;
  record_end(job, runs.back(), run_segments(runs, nullptr, unix_now()));
  add_note(job, "billed from Slurm's accounting (slurmctld no longer knows the job)");
  return true;
}

Event SlurmBackend::exited(JobRecord& job, Watch& watch, RestClient& rest, int64_t id) {
  watch.output->finish();
  Event e;
  e.kind = Event::Kind::kExited;
  e.outcome = outcome_of(*watch.final_record);
  e.outcome.stopped_by_cluster = stopped_by_time_limit(*watch.final_record, job);
  // Every run is billed: a requeued job's earlier runs are in accounting only. Without it (or
  // while slurmdbd does not answer) the run slurmctld holds is the bill.
  auto runs = accounted_runs(rest, job, id, /*retry=*/false);
  auto segments =
      run_segments(runs ? *runs : std::vector<SlurmJob>{}, &*watch.final_record, unix_now());
  // Killed while SUSPENDED: slurmctld records its end at its suspension, but a suspended job
  // keeps its GPUs (Slurm frees only its cores) until it ends: held until nodus's cancel, or
  // until nodus saw it end when someone else cancelled it.
  const SlurmJob& last = *watch.final_record;
  if (watch.suspended && !segments.empty() && last.end_time > 0 &&
      std::fabs(last.end_time - last.suspend_time) < 1) {
    double held_until = watch.kill_sent_at > 0 ? watch.kill_sent_at : watch.final_seen_at;
    if (held_until > segments.back().end + 1) {
      char line[400];
      std::snprintf(line, sizeof line,
                    "ended while suspended: Slurm records its end at its suspension, %.0f s "
                    "before %s, but a suspended job keeps its GPUs until it ends: billed to %s",
                    held_until - segments.back().end,
                    watch.kill_sent_at > 0 ? "nodus cancelled it" : "nodus saw it end",
                    watch.kill_sent_at > 0 ? "the cancel" : "then (within a poll of its end)");
      e.outcome.billing_note = line;
      segments.back().end = held_until;
      e.outcome.ended_at = held_until;
      e.outcome.whole_seconds = false;
    }
  }
  if (!segments.empty()) {
    e.outcome.started_at = segments.front().start;
    e.outcome.billed_seconds = total_seconds(segments);
  }
  e.started_at = e.outcome.started_at;
  watches_.erase(job.id);
  return e;
}

Result<Event> SlurmBackend::wait(JobRecord& job, SteadyTime deadline, int wake_fd) {
  auto rest = client();
  if (!rest) return rest.error();
  auto id = slurm_id(**rest, job);
  if (!id) return id.error();
  if (!*id)
    return Error::permanent("Slurm has no job named " + slurm_job_name(job, (*rest)->settings()) +
                            " (job " + std::to_string(job.id) + " was never submitted)");
  Watch& w = watch_for(job);
  if (w.final_record) return exited(job, w, **rest, **id);
  if (readable_before(wake_fd, Clock::now())) return event_of(Event::Kind::kWoken);

  const std::string expected_name = slurm_job_name(job, (*rest)->settings());
  for (;;) {
    auto now = Clock::now();
    if (now >= w.next_poll) {
      auto records = (*rest)->job(**id, /*retry=*/false);
      if (records) {
        if (w.outage_reported) std::fprintf(stderr, "nodus: slurmrestd answers again\n");
        w.failing_since.reset();
        w.outage_reported = false;
        w.interval = timing_.poll;
        if (w.check_duplicates_until && now < *w.check_duplicates_until &&
            now >= w.next_duplicate_check) {
          cancel_duplicates(**rest, expected_name, **id);
          w.next_duplicate_check = now + std::chrono::seconds(2);
        }
        const SlurmJob* r = record_of(*records, **id);
        if (r == nullptr) {
          // Forgotten by slurmctld (MinJobAge passed while nodus could not ask): its accounting
          // still has how it ended.
          auto runs = accounted_runs(**rest, job, **id);
          if (runs && !runs->empty() && phase_of(runs->back().state) == Phase::kFinal) {
            w.final_record = runs->back();
            if (!job.started_at && w.final_record->start_time > 0) {
              job.started_at = w.final_record->start_time;
              return event_of(Event::Kind::kStarted, w.final_record->start_time);
            }
            return exited(job, w, **rest, **id);
          }
          return Error::permanent("Slurm no longer knows job " + std::to_string(**id) +
                                  " (it ended more than MinJobAge ago, or the cluster was reset)");
        }
        if (!same_job(*r, job, expected_name))
          return Error::permanent("Slurm job " + std::to_string(**id) + " is '" + r->name +
                                  "', not nodus job " + std::to_string(job.id) +
                                  " (was the cluster's state reset?)");
        Phase phase = phase_of(r->state);
        if (phase != Phase::kFinal) w.suspended = r->state == "SUSPENDED";
        if (phase == Phase::kFinal && w.final_seen_at == 0) w.final_seen_at = unix_now();
        if (phase == Phase::kQueued && w.queue_reason != r->state_reason) {
          w.queue_reason = r->state_reason;
          w.next_poll = now + w.interval;
          Event e = event_of(Event::Kind::kQueued);
          e.why = r->state_reason.empty() ? "None" : r->state_reason;
          return e;
        }
        if (phase != Phase::kQueued) w.queue_reason.reset();
        if (phase != Phase::kQueued && !job.started_at && r->start_time > 0) {
          job.started_at = r->start_time;
          if (phase == Phase::kFinal) w.final_record = *r;
          return event_of(Event::Kind::kStarted, r->start_time);
        }
        if (phase == Phase::kFinal) {
          w.final_record = *r;
          return exited(job, w, **rest, **id);
        }
      } else if (!records.error().retryable()) {
        return records.error();
      } else {
        if (!w.failing_since) w.failing_since = now;
        w.last_error = records.error().message;
        w.interval = std::min(timing_.max_backoff, std::max(timing_.poll, w.interval * 2));
        if (now - *w.failing_since >= timing_.lost_after)
          return Error::permanent("lost track of Slurm job " + std::to_string(**id) + ": " +
                                  w.last_error);
      }
      w.next_poll = now + w.interval;
    }
    w.output->poll();
    now = Clock::now();
    if (now >= deadline) {
      // Once per outage: the caller prints it, and must not be handed it again at every call.
      if (w.failing_since && !w.outage_reported &&
          now - *w.failing_since >= timing_.quiet_failures) {
        w.outage_reported = true;
        return Error::retryable(w.last_error + " (still trying, with backoff)");
      }
      return event_of(Event::Kind::kDeadline);
    }
    auto until = std::min({w.next_poll, deadline, now + timing_.output_tick});
    if (readable_before(wake_fd, until)) return event_of(Event::Kind::kWoken);
  }
}

Result<void> SlurmBackend::signal(JobRecord& job, int sig) {
  auto name = signal_name(sig);
  if (!name) return Error::permanent("Slurm cannot deliver signal " + std::to_string(sig));
  auto rest = client();
  if (!rest) return rest.error();
  auto id = slurm_id(**rest, job);
  if (!id) return id.error();
  if (!*id) return {};
  auto sent = (*rest)->cancel(job.backend_id, *name);
  if (!sent)
    return Error{sent.error().kind,
                 "cannot signal Slurm job " + job.backend_id + ": " + sent.error().message, 125};
  // A job still queued cannot take a signal; stopping it politely means taking it off the queue.
  if (*sent == Delivery::kNotRunning && (sig == SIGTERM || sig == SIGINT || sig == SIGKILL))
    return kill(job);
  return {};
}

Result<void> SlurmBackend::kill(JobRecord& job) {
  auto rest = client();
  if (!rest) return rest.error();
  auto id = slurm_id(**rest, job);
  if (!id) return id.error();
  if (!*id) return {};
  return cancel_until_gone(**rest, job, **id);
}

Error SlurmBackend::token_rejected(const RestClient& rest, int64_t id) {
  if (token_rejected_) return *token_rejected_;
  const bool jwt = rest.settings().uses_jwt();
  std::string why = jwt ? " (SLURM_JWT expired or revoked?)" : "";
  if (auto exp = jwt ? jwt_expiry(rest.settings().jwt) : std::nullopt;
      exp && *exp <= static_cast<double>(std::time(nullptr))) {
    char when[32];
    std::time_t t = static_cast<std::time_t>(*exp);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    why = std::string(" (SLURM_JWT expired at ") + when + ")";
  }
  std::string line = std::string("slurm: ") + (jwt ? "token" : "authentication") +
                     " rejected (HTTP " + std::to_string(rest.auth_refused()) +
                     ") while cancelling Slurm job " + std::to_string(id) + why +
                     ": not retrying; leaving the job to the node's enforcer (its deadline in the "
                     "batch script, then Slurm's time limit)";
  token_rejected_ = Error::permanent(line);
  return *token_rejected_;
}

void SlurmBackend::note_kill_sent(const JobRecord& job) {
  if (auto w = watches_.find(job.id); w != watches_.end() && w->second.kill_sent_at == 0)
    w->second.kill_sent_at = unix_now();
}

Result<void> SlurmBackend::cancel_until_gone(RestClient& rest, JobRecord& job, int64_t id) {
  if (token_rejected_) return *token_rejected_;
  const auto give_up = Clock::now() + timing_.lost_after;
  auto delay = timing_.cancel_backoff;
  bool cancelled = false, killed = false, told = false;
  std::string last_error;
  for (;;) {
    // Done when Slurm says so: gone from its records, or ended.
    auto records = rest.job(id, /*retry=*/false);
    if (records) {
      const SlurmJob* r = record_of(*records, id);
      if (r == nullptr || phase_of(r->state) == Phase::kFinal) {
        if (told) std::fprintf(stderr, "nodus: Slurm job %lld ended\n", static_cast<long long>(id));
        return {};
      }
      // A kill is SIGKILL, as for local jobs: a plain cancel is SIGTERM, then slurmd's own
      // SIGKILL no sooner than 5 s (KillWait, 30 s on many clusters) later, the GPUs held
      // meanwhile. Marked only once Slurm accepted it.
      if (!killed && phase_of(r->state) == Phase::kRunning) {
        auto sent = rest.cancel(std::to_string(id), "KILL");
        if (sent) {
          killed = true;
          note_kill_sent(job);
        }
      }
    } else if (rest.auth_refused() && cancelled) {
      return token_rejected(rest, id);  // the cancel went through; its end cannot be asked
    } else {
      last_error = records.error().message;
    }
    if (!cancelled) {
      auto sent = rest.cancel(std::to_string(id));
      if (sent) {
        cancelled = true;
        note_kill_sent(job);
      } else if (rest.auth_refused()) {
        return token_rejected(rest, id);
      } else if (!sent.error().retryable()) {
        return Error{sent.error().kind,
                     "cannot cancel Slurm job " + job.backend_id + ": " + sent.error().message,
                     125};
      } else {
        last_error = sent.error().message;
      }
    }
    if (Clock::now() >= give_up)
      return Error::retryable("cannot cancel Slurm job " + job.backend_id + ": " + last_error);
    if (!last_error.empty() && !told) {  // one line per outage, not per attempt
      std::fprintf(stderr, "nodus: cancel of Slurm job %lld not confirmed yet (%s); retrying\n",
                   static_cast<long long>(id), last_error.c_str());
      told = true;
    }
    // Backoff is for an outage; a Slurm that answers while the job is still ending (COMPLETING
    // for a second or more on a busy node) is asked again at the first pace, or the kill would
    // be confirmed up to a whole doubled delay late.
    bool failing = !last_error.empty();
    last_error.clear();
    std::this_thread::sleep_for(delay);
    delay = failing ? std::min(delay * 2, timing_.max_backoff) : timing_.cancel_backoff;
  }
}

Result<bool> SlurmBackend::refresh(JobRecord& job) {
  if (is_final(job.state)) return false;
  auto rest = client();
  if (!rest) return rest.error();
  const JobRecord before = job;
  auto id = slurm_id(**rest, job);
  if (!id) return id.error();
  if (!*id) {
    // Nobody supervises it (refresh's contract) and Slurm has no job by its name: it was never
    // submitted, or it ended longer ago than Slurm remembers. Either way it will not move again.
    end_job(job, {JobState::kLost, std::nullopt, std::nullopt,
                  "Slurm has no job named " + slurm_job_name(job, (*rest)->settings()) +
                      " (never submitted, or it ended more than MinJobAge ago)"});
    return true;
  }
  auto records = (*rest)->job(**id);
  if (!records) return records.error();
  const SlurmJob* r = record_of(*records, **id);
  if (r != nullptr && !same_job(*r, job, slurm_job_name(job, (*rest)->settings()))) r = nullptr;
  if (r != nullptr && !r->name.empty() && r->name != slurm_job_name(job, (*rest)->settings()))
    add_note(job, renamed_note(*r));  // the id is another job's now: the cluster's state was reset
  // Slurm's accounting: every run (a requeued job's earlier ones), and the job itself once
  // slurmctld forgot it. A slurmdbd that does not answer leaves the bill to slurmctld's record.
  auto accounted = accounted_runs(**rest, job, **id);
  std::vector<SlurmJob> runs = accounted ? std::move(*accounted) : std::vector<SlurmJob>{};
  if (r == nullptr && bill_from_accounting(job, runs))
    return job.state != before.state || job.started_at != before.started_at ||
           job.ended_at != before.ended_at || job.cost != before.cost ||
           job.exit_code != before.exit_code;
  if (r == nullptr) {
    if (!accounted)
      add_note(job, "Slurm's accounting did not answer: " + accounted.error().message);
    end_job(job, {JobState::kLost, std::nullopt, std::nullopt,
                  "Slurm no longer knows job " + std::to_string(**id) +
                      " (it ended more than MinJobAge ago, or the cluster was reset)"});
    return true;
  }
  switch (phase_of(r->state)) {
    case Phase::kQueued:  // not started yet, or requeued: the runs so far are billed
      move_job(job, JobState::kWaiting);
      job.cost = cost_of(job, total_seconds(run_segments(runs, r, unix_now())));
      break;
    case Phase::kRunning: {
      move_job(job, JobState::kRunning);
      auto segments = run_segments(runs, r, unix_now());
      if (!segments.empty()) job.started_at = segments.front().start;
      job.cost = cost_of(job, total_seconds(segments));
      break;
    }
    case Phase::kFinal:
      record_end(job, *r, run_segments(runs, r, unix_now()), end_held_while_suspended(*r, runs));
      break;
  }
  return job.state != before.state || job.started_at != before.started_at ||
         job.ended_at != before.ended_at || job.cost != before.cost ||
         job.backend_id != before.backend_id || job.exit_code != before.exit_code;
}

}  // namespace

std::unique_ptr<Backend> make_slurm_backend(std::unique_ptr<RestClient> client, WaitTiming timing) {
  return std::make_unique<SlurmBackend>(std::move(client), timing);
}

}  // namespace nodus::backend::slurm

namespace nodus::backend {

std::unique_ptr<Backend> make_slurm_backend() {
  return slurm::make_slurm_backend(nullptr, slurm::WaitTiming{});
}

}  // namespace nodus::backend
