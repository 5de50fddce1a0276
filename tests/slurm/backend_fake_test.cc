// SlurmBackend against a scripted slurmrestd: no double submit, wait's timing, stop, refresh.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "backend/slurm/job_script.h"
#include "backend/slurm/settings.h"
#include "backend/slurm/slurm_backend.h"
#include "fake_http.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The settings every Rig uses (one store tag for the whole test run).
const SlurmSettings& settings() {
  static const SlurmSettings s = settings_for("http://127.0.0.1:6820", "tok-123456789", "alice");
  return s;
}

// A fixture's job records renamed (and renumbered) as the job under test.
std::string as_job(const std::string& file, const JobRecord& job, int64_t id) {
  auto j = nlohmann::json::parse(fixture(file));
  for (auto& r : j["jobs"]) {
    r["name"] = slurm_job_name(job, settings());
    r["job_id"] = id;
  }
  return j.dump();
}

std::string jobs_list(const JobRecord& job, int64_t id) {
  return as_job("job_running.json", job, id);
}

JobRecord test_job() {
  JobRecord job;
  job.id = 3;
  job.created_at = 1795966160.5;
  job.backend = "slurm";
  job.argv = {"sleep", "1"};
  return job;
}

WaitTiming fast_timing() {
  WaitTiming t;
  t.poll = milliseconds(20);
  t.max_backoff = milliseconds(40);
  t.output_tick = milliseconds(10);
  t.quiet_failures = milliseconds(100);
  t.lost_after = milliseconds(400);
  t.submit_backoff = milliseconds(1);
  t.cancel_backoff = milliseconds(5);
  return t;
}

struct Rig {
  std::shared_ptr<FakeHttp::State> http = std::make_shared<FakeHttp::State>();
  std::unique_ptr<Backend> backend;
  Rig() { backend = make_slurm_backend(fake_client(http, settings()), fast_timing()); }
};

TEST(SlurmBackendSubmit, LostAnswerIsFoundByNameNotSubmittedTwice) {
  Rig rig;
  JobRecord job = test_job();
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (r.method == "POST") return Error::retryable("POST ...: Operation timed out");
    return reply(200, jobs_list(job, 42));
  };
  ASSERT_TRUE(rig.backend->submit(job, LaunchSpec{}).ok());
  EXPECT_EQ(job.backend_id, "42");
  EXPECT_EQ(rig.http->count("POST", "/job/submit"), 1);
  EXPECT_EQ(job.log_path, "/tmp/nodus-slurm-test-jobs/" + slurm_job_name(job, settings()) + ".out");
}

TEST(SlurmBackendSubmit, RetriesWhenTheLostSubmitCreatedNothing) {
  Rig rig;
  JobRecord job = test_job();
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (r.method == "POST")
      return rig.http->count("POST", "") == 1 ? Result<http::Response>(Error::retryable("refused"))
                                              : reply(200, fixture("submit_ok.json"));
    return reply(200, R"({"errors":[],"jobs":[]})");
  };
  ASSERT_TRUE(rig.backend->submit(job, LaunchSpec{}).ok());
  EXPECT_EQ(job.backend_id, "2");
  EXPECT_EQ(rig.http->count("POST", "/job/submit"), 2);
  EXPECT_EQ(rig.http->count("GET", "/jobs"), 3);  // twice before the resend, once for copies
}

TEST(SlurmBackendSubmit, RejectionIsOneLineWithSlurmsWords) {
  Rig rig;
  JobRecord job = test_job();
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return reply(500, fixture("submit_error_2014.json"));
  };
  auto r = rig.backend->submit(job, LaunchSpec{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 125);
  EXPECT_EQ(r.error().message.rfind("cannot submit the job to Slurm: ", 0), 0u);
  EXPECT_NE(r.error().message.find("Requested node configuration is not available (2014)"),
            std::string::npos);
  EXPECT_TRUE(job.backend_id.empty());
  EXPECT_EQ(rig.http->count("POST", ""), 1);
}

TEST(SlurmBackendWait, ReportsStartThenExitWithSlurmsTimes) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "9";
  rig.http->handler = [&](const http::Request&) -> Result<http::Response> {
    return reply(
        200, as_job(rig.http->requests.size() < 3 ? "job_running.json" : "job_failed_exit3.json",
                    job, 9));
  };
  auto deadline = Clock::now() + std::chrono::seconds(5);
  auto started = rig.backend->wait(job, deadline, -1);
  ASSERT_TRUE(started.ok()) << started.error().message;
  EXPECT_EQ(started->kind, Event::Kind::kStarted);
  EXPECT_EQ(started->started_at, 1795966165);
  EXPECT_EQ(job.started_at, 1795966165);
  auto exited = rig.backend->wait(job, deadline, -1);
  ASSERT_TRUE(exited.ok());
  ASSERT_EQ(exited->kind, Event::Kind::kExited);
  EXPECT_EQ(exited->outcome.exit_code, 3);
  EXPECT_EQ(exited->outcome.started_at, 1795966165);  // the failed job's own record
  EXPECT_LT(Clock::now(), deadline);
}

TEST(SlurmBackendWait, WakeFdEndsTheWaitAtOnce) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "4";
  rig.http->handler = [&](const http::Request&) -> Result<http::Response> {
    return reply(200, as_job("job_pending.json", job, 4));
  };
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  auto t0 = Clock::now();
  // The queue's reason comes first, once; then the wait goes on to its deadline.
  auto queued = rig.backend->wait(job, t0 + milliseconds(300), fds[0]);
  ASSERT_TRUE(queued.ok());
  EXPECT_EQ(queued->kind, Event::Kind::kQueued);
  EXPECT_EQ(queued->why, "JobHeldUser");
  auto waiting = rig.backend->wait(job, t0 + milliseconds(300), fds[0]);
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->kind, Event::Kind::kDeadline);
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  t0 = Clock::now();
  auto woken = rig.backend->wait(job, t0 + std::chrono::seconds(10), fds[0]);
  ASSERT_TRUE(woken.ok());
  EXPECT_EQ(woken->kind, Event::Kind::kWoken);
  EXPECT_LT(Clock::now() - t0, milliseconds(500));
  close(fds[0]);
  close(fds[1]);
}

TEST(SlurmBackendWait, NeverWaitsPastTheDeadline) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "4";
  rig.http->handler = [&](const http::Request&) -> Result<http::Response> {
    return reply(200, as_job("job_pending.json", job, 4));
  };
  auto deadline = Clock::now() + milliseconds(250);
  auto queued = rig.backend->wait(job, deadline, -1);  // the queue's reason, once
  ASSERT_TRUE(queued.ok());
  EXPECT_EQ(queued->kind, Event::Kind::kQueued);
  auto r = rig.backend->wait(job, deadline, -1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Event::Kind::kDeadline);
  EXPECT_GE(Clock::now(), deadline);
  EXPECT_LT(Clock::now() - deadline, milliseconds(200));
  EXPECT_GE(rig.http->count("GET", "/job/4"), 3);  // it kept polling meanwhile
}

TEST(SlurmBackendWait, ForgottenJobIsAPermanentError) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "99999";
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return reply(500, fixture("job_unknown_2017.json"));
  };
  auto r = rig.backend->wait(job, Clock::now() + std::chrono::seconds(2), -1);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().retryable());
  EXPECT_NE(r.error().message.find("no longer knows job 99999"), std::string::npos);
}

TEST(SlurmBackendWait, JobIdReusedByAnotherJobIsAnError) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "5";
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return reply(200, fixture("job_running.json"));  // Slurm job 5 is named "run"
  };
  auto r = rig.backend->wait(job, Clock::now() + std::chrono::seconds(2), -1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("is 'run', not nodus job 3"), std::string::npos);
}

TEST(SlurmBackendWait, OutageIsReportedAfterAWhileThenGivenUp) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "4";
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return Error::retryable("GET ...: Couldn't connect to server");
  };
  auto quiet = rig.backend->wait(job, Clock::now() + milliseconds(50), -1);
  ASSERT_TRUE(quiet.ok());  // a short outage is not news
  EXPECT_EQ(quiet->kind, Event::Kind::kDeadline);
  auto reported = rig.backend->wait(job, Clock::now() + milliseconds(150), -1);
  ASSERT_FALSE(reported.ok());
  EXPECT_TRUE(reported.error().retryable());
  // Reported once per outage: later calls wait out their deadline (no busy loop of errors).
  Result<Event> last = reported;
  int reports = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < 40; ++i) {
    last = rig.backend->wait(job, Clock::now() + milliseconds(50), -1);
    if (!last.ok() && !last.error().retryable()) break;
    if (!last.ok()) ++reports;
  }
  EXPECT_EQ(reports, 0);
  EXPECT_GE(Clock::now() - t0, milliseconds(150));  // the calls waited, they did not spin
  int gets = rig.http->count("GET", "/job/4");
  EXPECT_LT(gets, 30);  // backoff: at most one GET per max_backoff (40 ms) over ~400 ms
  ASSERT_FALSE(last.ok());
  EXPECT_FALSE(last.error().retryable());
  EXPECT_NE(last.error().message.find("lost track of Slurm job 4"), std::string::npos);
}

// A fixture's record with another state.
std::string with_state(const JobRecord& job, int64_t id, const std::string& state) {
  auto j = nlohmann::json::parse(as_job("job_running.json", job, id));
  for (auto& r : j["jobs"]) r["job_state"] = state;
  return j.dump();
}

TEST(SlurmBackendStop, PoliteStopOfAQueuedJobCancelsIt) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "15";
  bool cancelled = false;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (r.url.find("signal=") != std::string::npos)
      return reply(500,
                   R"({"errors":[{"error_number":2020,"error":"Job can not be altered now"}]})");
    if (r.method == "GET")
      return reply(200, with_state(job, 15, cancelled ? "CANCELLED" : "PENDING"));
    cancelled = true;
    return reply(200, fixture("delete_ok.json"));
  };
  ASSERT_TRUE(rig.backend->signal(job, SIGTERM).ok());
  EXPECT_EQ(rig.http->count("DELETE", "/job/15?signal=TERM"), 1);
  EXPECT_EQ(rig.http->count("DELETE", ""), 2);
}

TEST(SlurmBackendStop, KillIsRetriedThroughAnOutageUntilSlurmReportsTheEnd) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "16";
  int failures_left = 12;  // more than RestClient's own retries: the outage outlasts them
  bool killed = false, cancelled = false;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (failures_left > 0) {
      --failures_left;
      return Error::retryable("cannot reach slurmrestd: Couldn't connect to server");
    }
    if (r.method == "GET")
      return reply(200, with_state(job, 16, cancelled ? "CANCELLED" : "RUNNING"));
    if (r.url.find("signal=KILL") != std::string::npos)
      killed = true;
    else
      cancelled = true;
    return reply(200, fixture("delete_ok.json"));
  };
  ASSERT_TRUE(rig.backend->kill(job).ok());
  EXPECT_TRUE(killed);  // SIGKILL through the signal API, not only a cancel (TERM, KillWait)
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(failures_left, 0);
}

// A job that takes a while to end (COMPLETING: slurmstepd cleaning up on a busy node) is asked
// about at the first pace: backoff is for an outage, and doubling it here confirmed a kill up to
// 1.6 s late on the dev cluster.
TEST(SlurmBackendStop, KillOfAJobStillEndingIsConfirmedAtTheFirstPace) {
  auto http = std::make_shared<FakeHttp::State>();
  WaitTiming timing = fast_timing();
  timing.cancel_backoff = milliseconds(20);
  timing.max_backoff = milliseconds(2000);
  auto backend = make_slurm_backend(fake_client(http, settings()), timing);
  JobRecord job = test_job();
  job.backend_id = "18";
  int gets = 0;
  http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (r.method != "GET") return reply(200, fixture("delete_ok.json"));
    ++gets;  // RUNNING, then COMPLETING five times, then CANCELLED
    return reply(200, with_state(job, 18,
                                 gets == 1   ? "RUNNING"
                                 : gets <= 6 ? "COMPLETING"
                                             : "CANCELLED"));
  };
  auto t0 = Clock::now();
  ASSERT_TRUE(backend->kill(job).ok());
  // 6 pauses of 20 ms; doubled they would be 1.26 s.
  EXPECT_LT(Clock::now() - t0, milliseconds(600));
  EXPECT_EQ(gets, 7);
}

TEST(SlurmBackendStop, KillThatSlurmNeverConfirmsIsAnErrorAfterLostAfter) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "17";
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return Error::retryable("cannot reach slurmrestd: Couldn't connect to server");
  };
  auto t0 = Clock::now();
  auto r = rig.backend->kill(job);
  ASSERT_FALSE(r.ok());
  EXPECT_GE(Clock::now() - t0, milliseconds(400));
  EXPECT_NE(r.error().message.find("cannot cancel Slurm job 17"), std::string::npos);
}

// Issue 30: a token that expires while nodus stops a job is refused by every later request;
// asking again for lost_after (3 x 10 minutes, in the supervisor) cannot help. The stop ends at
// once, in one line, and leaves the job to the node's enforcer.
TEST(SlurmBackendStop, ATokenRejectedWhileCancellingEndsTheRetriesAtOnceInOneLine) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "19";
  int answered = 0;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    // The first GET, the SIGKILL and the cancel are accepted; then the token has expired.
    if (++answered <= 3)
      return r.method == "GET" ? reply(200, with_state(job, 19, "RUNNING"))
                               : reply(200, fixture("delete_ok.json"));
    return reply(401, "Authentication failure");
  };
  ::testing::internal::CaptureStderr();
  auto t0 = Clock::now();
  auto r = rig.backend->kill(job);
  auto took = Clock::now() - t0;
  auto again = rig.backend->kill(job);  // the supervisor's later kill: no new line, no wait
  auto took_again = Clock::now() - t0 - took;
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().retryable());
  EXPECT_NE(r.error().message.find("slurm: token rejected (HTTP 401)"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("leaving the job to the node's enforcer"), std::string::npos)
      << r.error().message;
  EXPECT_LT(took, milliseconds(100)) << "retried a rejected token (lost_after is 400 ms here)";
  ASSERT_FALSE(again.ok());
  EXPECT_LT(took_again, milliseconds(50));
  EXPECT_EQ(err, "");  // the error is the line, which the supervisor prints
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  EXPECT_EQ(again.error().message, r.error().message);
  EXPECT_EQ(err.find("tok-123456789"), std::string::npos) << err;
}

TEST(SlurmBackendStop, AForbiddenCancelIsOneLineToo) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "20";
  rig.http->handler = [&](const http::Request&) -> Result<http::Response> {
    return reply(403, "Forbidden");
  };
  ::testing::internal::CaptureStderr();
  auto r = rig.backend->kill(job);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("token rejected (HTTP 403)"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(err, "");
  // One DELETE, no retries of it.
  EXPECT_LE(rig.http->count("DELETE", "/job/20"), 1);
}

// What Slurm 22.05 really answers once a JWT has expired (measured on the dev cluster): HTTP 500
// with "Unspecified error" (-1) for a GET and "Zero Bytes were transmitted or received" (5005),
// which otherwise reads as an outage, for a DELETE. The token's own exp tells them apart.
constexpr const char* kExpiredJwt =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJleHAiOjEwMDAwMDAwMDAsImlhdCI6OTk5OTk5MDAwLCJzdW4iOiJhbGljZSJ9.c2lnbmF0dXJl";
constexpr const char* kLiveJwt =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjQxMDI0NDQ4MDAsInN1biI6ImFsaWNlIn0.c2ln";

std::string slurm_error(int code, const std::string& words) {
  return nlohmann::json{{"errors", {{{"error_number", code}, {"error", words}}}}}.dump();
}

TEST(SlurmJwt, ExpiryIsReadFromTheTokensClaims) {
  EXPECT_EQ(jwt_expiry(kExpiredJwt), 1000000000.0);
  EXPECT_EQ(jwt_expiry(kLiveJwt), 4102444800.0);
  EXPECT_FALSE(jwt_expiry("tok-123456789"));
  EXPECT_FALSE(jwt_expiry("a.b.c"));
  EXPECT_FALSE(jwt_expiry("eyJhbGciOiJIUzI1NiJ9.e30.x"));  // {} : no exp
}

TEST(SlurmBackendStop, AnExpiredTokenEndsTheCancelAtOnceThoughSlurmSaysOutage) {
  auto http = std::make_shared<FakeHttp::State>();
  auto backend = make_slurm_backend(
      fake_client(http, settings_for("http://127.0.0.1:6820", kExpiredJwt, "alice")),
      fast_timing());
  JobRecord job = test_job();
  job.backend_id = "21";
  http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (r.method == "GET") return reply(500, slurm_error(-1, "Unspecified error"));
    return reply(500, slurm_error(5005, "Zero Bytes were transmitted or received"));
  };
  ::testing::internal::CaptureStderr();
  auto t0 = Clock::now();
  auto r = backend->kill(job);
  auto took = Clock::now() - t0;
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().retryable());
  EXPECT_NE(r.error().message.find("slurm: token rejected (HTTP 500)"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("expired at 2001-09-09 01:46:40 UTC"), std::string::npos)
      << r.error().message;
  EXPECT_LT(took, milliseconds(100)) << "retried an expired token (lost_after is 400 ms here)";
  EXPECT_EQ(err, "");
  EXPECT_EQ(err.find(kExpiredJwt), std::string::npos) << err;
  EXPECT_EQ(http->count("DELETE", "/job/21"), 1);
}

// The same answers with a token that has not expired are an outage, retried as before.
TEST(SlurmBackendStop, ALiveTokenWithTheSameAnswersIsStillRetried) {
  auto http = std::make_shared<FakeHttp::State>();
  auto backend = make_slurm_backend(
      fake_client(http, settings_for("http://127.0.0.1:6820", kLiveJwt, "alice")), fast_timing());
  JobRecord job = test_job();
  job.backend_id = "22";
  http->handler = [&](const http::Request&) -> Result<http::Response> {
    return reply(500, slurm_error(5005, "Zero Bytes were transmitted or received"));
  };
  auto t0 = Clock::now();
  auto r = backend->kill(job);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().retryable());
  EXPECT_GE(Clock::now() - t0, milliseconds(400));
  EXPECT_EQ(r.error().message.find("token rejected"), std::string::npos) << r.error().message;
}

TEST(SlurmBackendSubmit, NeverSubmitsAgainBeforeSlurmAnswersTheLookup) {
  Rig rig;
  JobRecord job = test_job();
  int lookups_failing = 5;
  std::vector<std::string> order;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (r.method == "POST") {
      order.push_back("POST");
      if (rig.http->count("POST", "") == 1) return Error::retryable("POST: Operation timed out");
      return reply(200, fixture("submit_ok.json"));
    }
    if (r.url.find("/jobs") != std::string::npos && lookups_failing > 0) {
      --lookups_failing;
      order.push_back("lookup failed");
      return Error::retryable("GET /jobs: Operation timed out");
    }
    order.push_back("lookup");
    return reply(200, R"({"errors":[],"jobs":[]})");
  };
  ASSERT_TRUE(rig.backend->submit(job, LaunchSpec{}).ok());
  EXPECT_EQ(job.backend_id, "2");
  ASSERT_GE(order.size(), 9u);
  EXPECT_EQ(order[0], "POST");
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(order[i], "lookup failed");
  EXPECT_EQ(order[6], "lookup");
  EXPECT_EQ(order[7], "lookup");  // "no such job" twice, a backoff apart
  EXPECT_EQ(order[8], "POST");
}

TEST(SlurmBackendSubmit, ALateCopyOfALostSubmitIsCancelled) {
  Rig rig;
  JobRecord job = test_job();
  // The first POST timed out but slurmrestd created job 41 later; the lookup came too early.
  bool late_copy = false;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (r.method == "POST") {
      if (rig.http->count("POST", "") == 1) return Error::retryable("POST: Operation timed out");
      late_copy = true;
      return reply(200, fixture("submit_ok.json"));  // job 2
    }
    if (r.method == "DELETE") return reply(200, fixture("delete_ok.json"));
    if (!late_copy) return reply(200, R"({"errors":[],"jobs":[]})");
    auto both = nlohmann::json::parse(as_job("job_running.json", job, 41));
    auto ours = nlohmann::json::parse(as_job("job_running.json", job, 2));
    both["jobs"].push_back(ours["jobs"][0]);
    return reply(200, both.dump());
  };
  ASSERT_TRUE(rig.backend->submit(job, LaunchSpec{}).ok());
  EXPECT_EQ(job.backend_id, "2");
  EXPECT_EQ(rig.http->count("DELETE", "/job/41"), 1);
  EXPECT_EQ(rig.http->count("DELETE", "/job/2"), 0);
}

TEST(SlurmBackendStop, KillOfAJobSlurmForgotSucceeds) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "99999";
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return reply(500, fixture("job_unknown_2017.json"));
  };
  EXPECT_TRUE(rig.backend->kill(job).ok());
}

TEST(SlurmBackendRefresh, FinishedJobGetsStateTimesAndCost) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "6";
  job.state = JobState::kRunning;
  job.gpu_count = 2;
  job.rate_per_gpu_hour = 3600;
  rig.http->handler = [&](const http::Request&) -> Result<http::Response> {
    return reply(200, as_job("job_cancelled.json", job, 6));
  };
  auto changed = rig.backend->refresh(job);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(job.state, JobState::kStopped);
  EXPECT_EQ(job.exit_code, 143);
  EXPECT_EQ(job.started_at, 1795966165);
  EXPECT_EQ(job.ended_at, 1795966167);
  EXPECT_DOUBLE_EQ(job.cost, 2 * 1.0 * 2);  // 2 GPUs x $1/s x 2 s
  auto again = rig.backend->refresh(job);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);  // final states never change
}

TEST(SlurmBackendRefresh, JobWithoutIdIsReconciledByName) {
  Rig rig;
  JobRecord job = test_job();
  job.state = JobState::kWaiting;
  rig.http->handler = [&](const http::Request&) -> Result<http::Response> {
    return reply(200, jobs_list(job, 77));
  };
  auto changed = rig.backend->refresh(job);
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  EXPECT_TRUE(*changed);
  EXPECT_EQ(job.backend_id, "77");
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(rig.http->count("GET", "/jobs"), 1);
}

TEST(SlurmBackendRefresh, UnsupervisedJobSlurmNeverHadIsLost) {
  Rig rig;
  JobRecord job = test_job();
  job.state = JobState::kWaiting;
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return reply(200, R"({"errors":[],"jobs":[]})");
  };
  auto changed = rig.backend->refresh(job);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(job.state, JobState::kLost);
  EXPECT_NE(job.note.find(slurm_job_name(job, settings())), std::string::npos);
  EXPECT_TRUE(job.backend_id.empty());
}

TEST(SlurmBackendRefresh, UnreachableSlurmChangesNothing) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "5";
  job.state = JobState::kRunning;
  rig.http->handler = [](const http::Request&) -> Result<http::Response> {
    return Error::retryable("GET ...: Couldn't connect to server");
  };
  auto changed = rig.backend->refresh(job);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(job.state, JobState::kRunning);
}

// Job 156's accounting (tests/data/slurm/accounting_requeued.json: ran 3 s, requeued, cancelled
// while queued again) as the job under test's.
std::string accounting_of(const JobRecord& job) {
  return as_job("accounting_requeued.json", job, 156);
}

bool is_accounting(const http::Request& r) { return r.url.find("/slurmdb/") != std::string::npos; }

TEST(SlurmBackendRefresh, AJobSlurmctldForgotIsBilledFromAccounting) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "156";
  job.state = JobState::kRunning;
  job.gpu_count = 2;
  job.rate_per_gpu_hour = 3600;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (is_accounting(r)) return reply(200, accounting_of(job));
    return reply(500, fixture("job_unknown_2017.json"));  // past MinJobAge
  };
  auto changed = rig.backend->refresh(job);
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  EXPECT_TRUE(*changed);
  EXPECT_EQ(job.state, JobState::kStopped);  // cancelled, not "lost"
  EXPECT_EQ(job.started_at, 1796102702);
  EXPECT_EQ(job.ended_at, 1796102732);
  EXPECT_DOUBLE_EQ(job.cost, 2 * 1.0 * 3);  // the one run: 3 s on 2 GPUs at $1/s each
  EXPECT_NE(job.note.find("accounting"), std::string::npos);
}

TEST(SlurmBackendRefresh, WithoutAccountingAForgottenJobIsLostAsBefore) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "156";
  job.state = JobState::kRunning;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (is_accounting(r)) return reply(404, "Unable find requested URL.");
    return reply(500, fixture("job_unknown_2017.json"));
  };
  auto changed = rig.backend->refresh(job);
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  EXPECT_EQ(job.state, JobState::kLost);
  EXPECT_NE(job.note.find("MinJobAge"), std::string::npos);
}

TEST(SlurmBackendRefresh, ARunningRequeuedJobIsBilledForEveryRun) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "156";
  job.state = JobState::kRunning;
  job.gpu_count = 1;
  job.rate_per_gpu_hour = 3600;
  double now = unix_now();
  auto accounting = nlohmann::json::parse(accounting_of(job));
  accounting["jobs"][1]["state"]["current"] = "RUNNING";  // the second run goes on
  accounting["jobs"][1]["time"]["start"] = static_cast<int64_t>(now) - 10;
  accounting["jobs"][1]["time"]["end"] = 0;
  auto live = nlohmann::json::parse(as_job("job_running.json", job, 156));
  live["jobs"][0]["start_time"] = static_cast<int64_t>(now) - 10;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    return reply(200, is_accounting(r) ? accounting.dump() : live.dump());
  };
  auto changed = rig.backend->refresh(job);
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.started_at, 1796102702);  // the first run's start
  EXPECT_NEAR(job.cost, 3 + (now - (static_cast<int64_t>(now) - 10)), 1.5);  // 3 s + ~10 s
}

TEST(SlurmBackendWait, AJobForgottenWhileUnwatchedEndsFromAccounting) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "156";
  job.started_at = 1796102702;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    if (is_accounting(r)) return reply(200, accounting_of(job));
    return reply(500, fixture("job_unknown_2017.json"));
  };
  auto r = rig.backend->wait(job, Clock::now() + std::chrono::seconds(2), -1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->kind, Event::Kind::kExited);
  EXPECT_EQ(r->outcome.exit_code, 143);
  EXPECT_EQ(r->outcome.started_at, 1796102702);
  EXPECT_EQ(r->outcome.ended_at, 1796102732);
  EXPECT_EQ(r->outcome.billed_seconds, 3);  // it ran 3 s of those 30
}

TEST(SlurmBackendWait, TheEndOfARequeuedJobBillsEveryRun) {
  Rig rig;
  JobRecord job = test_job();
  job.backend_id = "156";
  job.started_at = 1796102702;
  auto accounting = nlohmann::json::parse(accounting_of(job));
  accounting["jobs"][1]["state"]["current"] = "COMPLETED";
  accounting["jobs"][1]["time"]["start"] = 1796102830;
  accounting["jobs"][1]["time"]["end"] = 0;  // not in accounting yet: slurmctld's end counts
  auto done = nlohmann::json::parse(as_job("job_completed.json", job, 156));
  done["jobs"][0]["start_time"] = 1796102830;
  done["jobs"][0]["end_time"] = 1796102850;
  rig.http->handler = [&](const http::Request& r) -> Result<http::Response> {
    return reply(200, is_accounting(r) ? accounting.dump() : done.dump());
  };
  auto r = rig.backend->wait(job, Clock::now() + std::chrono::seconds(2), -1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->kind, Event::Kind::kExited);
  EXPECT_EQ(r->outcome.exit_code, 0);
  EXPECT_EQ(r->outcome.started_at, 1796102702);
  EXPECT_EQ(r->outcome.ended_at, 1796102850);
  EXPECT_EQ(r->outcome.billed_seconds, 3 + 20);
}

TEST(SlurmBackendConfig, MissingUrlIsAnErrorOfTheFirstCallNotOfConstruction) {
  unsetenv("NODUS_SLURM_URL");
  auto backend = nodus::backend::make_slurm_backend();
  EXPECT_EQ(backend->name(), "slurm");
  JobRecord job = test_job();
  auto r = backend->submit(job, LaunchSpec{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("NODUS_SLURM_URL is not set"), std::string::npos);
}

}  // namespace
}  // namespace nodus::backend::slurm
