// RestClient against a scripted HTTP client: auth headers, Slurm's errors, retries, secrets.

#include "backend/slurm/rest.h"

#include <gtest/gtest.h>

#include "fake_http.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;

constexpr const char* kToken = "eyJhbGciOiJIUzI1NiJ9.secret-part.signature";

std::shared_ptr<FakeHttp::State> answering(long status, std::string body) {
  auto state = std::make_shared<FakeHttp::State>();
  state->handler = [=](const http::Request&) -> Result<http::Response> {
    return reply(status, body);
  };
  return state;
}

std::string header(const http::Request& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

TEST(SlurmRest, JwtEndpointSendsUserAndToken) {
  auto state = answering(200, fixture("ping.json"));
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken, "alice"));
  ASSERT_TRUE(rest->ping().ok());
  ASSERT_EQ(state->requests.size(), 1u);
  const auto& r = state->requests[0];
  EXPECT_EQ(r.url, "http://127.0.0.1:6820/slurm/v0.0.38/ping");
  EXPECT_EQ(r.unix_socket, "");
  EXPECT_EQ(header(r, "X-SLURM-USER-NAME"), "alice");
  EXPECT_EQ(header(r, "X-SLURM-USER-TOKEN"), kToken);
}

TEST(SlurmRest, SocketEndpointSendsNoToken) {
  char dir[] = "/tmp/nodus-slurm-rest-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string sock = std::string(dir) + "/s.sock";
  FILE* f = fopen(sock.c_str(), "w");  // the client checks that the socket exists
  fclose(f);
  auto state = answering(200, fixture("ping.json"));
  auto rest = fake_client(state, settings_for("unix://" + sock, kToken));
  ASSERT_TRUE(rest->ping().ok());
  const auto& r = state->requests.at(0);
  EXPECT_EQ(r.unix_socket, sock);
  EXPECT_EQ(header(r, "X-SLURM-USER-TOKEN"), "");
  EXPECT_EQ(header(r, "X-SLURM-USER-NAME"), "");
  unlink(sock.c_str());
  rmdir(dir);
}

TEST(SlurmRest, MissingSocketIsAClearRetryableError) {
  auto state = answering(200, "{}");
  auto rest = fake_client(state, settings_for("unix:///nonexistent/nodus/slurmrestd.sock"));
  auto r = rest->ping();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().retryable());
  EXPECT_NE(r.error().message.find("/nonexistent/nodus/slurmrestd.sock"), std::string::npos);
  EXPECT_NE(r.error().message.find("does not exist"), std::string::npos);
  EXPECT_TRUE(state->requests.empty());
}

TEST(SlurmRest, UnauthorizedSaysWhatToCheckWithoutTheToken) {
  auto state = answering(401, "Authentication failure");
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken, "alice"));
  auto r = rest->jobs();
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().retryable());
  EXPECT_EQ(r.error().exit_code, 125);
  EXPECT_NE(r.error().message.find("HTTP 401"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("SLURM_JWT"), std::string::npos);
  EXPECT_EQ(r.error().message.find(kToken), std::string::npos);
  EXPECT_EQ(state->requests.size(), 1u);  // not retried
}

TEST(SlurmRest, RejectedTokenIsExplained) {
  auto state = answering(500, R"({"errors":[{"error_number":-1,"error":"Unspecified error",
      "description":"slurmctld config is unable to load","source":"slurm_load_ctl_conf"}]})");
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken, "alice"));
  auto r = rest->ping();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("slurmctld config is unable to load"), std::string::npos);
  EXPECT_NE(r.error().message.find("token was rejected"), std::string::npos);
  EXPECT_EQ(r.error().message.find(kToken), std::string::npos);
}

TEST(SlurmRest, SocketEndpointGetsNoTokenHint) {
  char dir[] = "/tmp/nodus-slurm-rest-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string sock = std::string(dir) + "/s.sock";
  fclose(fopen(sock.c_str(), "w"));
  auto state = answering(500, R"({"errors":[{"error_code":5005,
      "error":"Zero Bytes were transmitted or received"}]})");
  auto rest = fake_client(state, settings_for("unix://" + sock));
  auto r = rest->submit(SubmitRequest{});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().retryable());  // a dropped connection may be just that
  EXPECT_EQ(r.error().message.find("token"), std::string::npos) << r.error().message;
  unlink(sock.c_str());
  rmdir(dir);
}

TEST(SlurmRest, SlurmErrorsComeBackInSlurmsWords) {
  auto state = answering(500, fixture("submit_error_2014.json"));
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken, "alice"));
  auto r = rest->submit(SubmitRequest{});
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().retryable());
  EXPECT_NE(r.error().message.find("Requested node configuration is not available (2014)"),
            std::string::npos);
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
}

TEST(SlurmRest, UnknownJobIsNoRecordsNotAnError) {
  auto state = answering(500, fixture("job_unknown_2017.json"));
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto job = rest->job(99999);
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_TRUE(job->empty());
  auto cancelled = rest->cancel("99999");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(*cancelled, Delivery::kUnknownJob);
}

TEST(SlurmRest, SignalForAQueuedJobSaysItDoesNotRun) {
  auto state = answering(500, R"({"errors":[{"error_number":2020,
      "error":"Job can not be altered now, try again later"}]})");
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto sent = rest->cancel("15", "TERM");
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, Delivery::kNotRunning);
  EXPECT_EQ(state->requests.at(0).method, "DELETE");
  EXPECT_NE(state->requests.at(0).url.find("/job/15?signal=TERM"), std::string::npos);
}

TEST(SlurmRest, TransientFailuresAreRetriedABoundedNumberOfTimes) {
  auto state = std::make_shared<FakeHttp::State>();
  state->handler = [](const http::Request&) -> Result<http::Response> {
    return Error::retryable("GET http://127.0.0.1:6820/x: Couldn't connect to server");
  };
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto r = rest->jobs();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().retryable());
  EXPECT_NE(r.error().message.find("cannot reach slurmrestd at http://127.0.0.1:6820"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(state->requests.size(), 3u);  // fast_retries(): 3 attempts
}

TEST(SlurmRest, ServiceUnavailableIsRetriedThenSucceeds) {
  auto state = std::make_shared<FakeHttp::State>();
  state->handler = [&state = *state](const http::Request&) -> Result<http::Response> {
    if (state.requests.size() < 2) return reply(503, "busy");
    return reply(200, fixture("job_running.json"));
  };
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto r = rest->job(5);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->size(), 1u);
  EXPECT_EQ(state->requests.size(), 2u);
}

TEST(SlurmRest, SubmitIsNeverRetriedBlindly) {
  auto state = std::make_shared<FakeHttp::State>();
  state->handler = [](const http::Request&) -> Result<http::Response> {
    return Error::retryable("POST http://127.0.0.1:6820/x: Operation timed out");
  };
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  EXPECT_FALSE(rest->submit(SubmitRequest{}).ok());
  EXPECT_EQ(state->requests.size(), 1u);
}

TEST(SlurmRest, TokenEchoedInAnyMessageIsScrubbed) {
  auto state = std::make_shared<FakeHttp::State>();
  state->handler = [](const http::Request&) -> Result<http::Response> {
    return reply(400, std::string("bad header value ") + kToken);
  };
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto r = rest->jobs();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find(kToken), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("<redacted>"), std::string::npos);
}

TEST(SlurmRest, AccountingWithoutTheJobIsEmpty) {
  auto state = answering(200, fixture("accounting_nothing_found.json"));
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto runs = rest->accounting(999999);
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_TRUE(runs->has_value());
  EXPECT_TRUE((*runs)->empty());
}

TEST(SlurmRest, AccountingNotServedIsNoneNotAnError) {
  // What slurmrestd 22.05 answers when the openapi/dbv0.0.38 plugin is not loaded.
  auto state =
      answering(404, "Unable find requested URL. Please view /openapi/v3 for API reference.");
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto runs = rest->accounting(5);
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  EXPECT_FALSE(runs->has_value());
}

TEST(SlurmRest, AccountingOutageIsAnError) {
  auto state = answering(503, "");
  auto rest = fake_client(state, settings_for("http://127.0.0.1:6820", kToken));
  auto runs = rest->accounting(5, /*retry=*/false);
  ASSERT_FALSE(runs.ok());
  EXPECT_TRUE(runs.error().retryable());
}

}  // namespace
}  // namespace nodus::backend::slurm
