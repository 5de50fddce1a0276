#include "core/http.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "core/http_test_server.h"
#include "core/secret.h"

namespace nodus::http {
namespace {

using nodus::testing::http_response;
using nodus::testing::TestHttpServer;

std::unique_ptr<Client> client() {
  auto c = make_curl_client();
  if (!c.ok()) throw std::runtime_error(c.error().message);
  return std::move(*c);
}

// A port on 127.0.0.1 that nothing listens on: bound by the kernel's choice, then released.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/nodus-http-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The one policy (core/secret.h), as for a job's --env: the user name stays, the password goes;
// a userinfo without ':' is likely a token (https://ghp_...@github.com) and goes whole.
TEST(RedactUrl, RedactsThePasswordAndKeepsTheUser) {
  EXPECT_EQ(redact_url("https://alice:s3cret@example.com/prices.json"),
            "https://alice:<redacted>@example.com/prices.json");
  EXPECT_EQ(redact_url("https://ghp_tok@example.com:8443/x"),
            "https://<redacted>@example.com:8443/x");
  EXPECT_EQ(redact_url("https://alice:s3cret@example.com/p"),
            redact_urls("https://alice:s3cret@example.com/p"));
}

TEST(RedactUrl, ReplacesTokenLikeQueryValuesAndKeepsOthers) {
  EXPECT_EQ(redact_url("https://h/p?token=abc&page=2"), "https://h/p?token=<redacted>&page=2");
  EXPECT_EQ(redact_url("https://h/p?a=1&X-Amz-Signature=ff&api_key=k&jwt=e.y.j&pw_secret=z"),
            "https://h/p?a=1&X-Amz-Signature=<redacted>&api_key=<redacted>&jwt=<redacted>"
            "&pw_secret=<redacted>");
  EXPECT_EQ(redact_url("https://h/p?PASSWORD=x"), "https://h/p?PASSWORD=<redacted>");
}

TEST(RedactUrl, RedactsTokensInTheFragment) {
  EXPECT_EQ(redact_url("https://h/cb#access_token=abc&state=1"),
            "https://h/cb#access_token=<redacted>&state=1");
}

TEST(RedactUrl, LeavesPlainUrlsAlone) {
  for (const char* url :
       {"https://example.com/prices.json", "http://127.0.0.1:6820/slurm/v0.0.38/ping",
        "unix:///run/slurmrestd.sock", "https://h/p?page=2&sort=asc", "", "/a@b/c"})
    EXPECT_EQ(redact_url(url), url);
}

TEST(RedactUrl, AtSignInThePathIsNotACredential) {
  EXPECT_EQ(redact_url("https://h/users/bob@example.com"), "https://h/users/bob@example.com");
}

TEST(CurlClient, GetReturnsStatusAndBodyAndSendsHeaders) {
  TestHttpServer server(http_response(200, "{\"ok\":true}"));
  Request req;
  req.url = server.url("/hello?x=1");
  req.headers = {{"X-Test", "yes"}};
  auto r = client()->send(req);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "{\"ok\":true}");
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].rfind("GET /hello?x=1 HTTP/1.1\r\n", 0), 0u) << seen[0];
  EXPECT_NE(seen[0].find("X-Test: yes\r\n"), std::string::npos);
}

TEST(CurlClient, PostSendsTheBody) {
  TestHttpServer server(http_response(201, "created"));
  Request req;
  req.method = "POST";
  req.url = server.url("/jobs");
  req.headers = {{"Content-Type", "application/json"}};
  req.body = R"({"name":"train"})";
  auto r = client()->send(req);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 201);
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].rfind("POST /jobs HTTP/1.1\r\n", 0), 0u) << seen[0];
  EXPECT_NE(seen[0].find("\r\n\r\n{\"name\":\"train\"}"), std::string::npos) << seen[0];
}

TEST(CurlClient, DeleteUsesTheMethodAndErrorStatusIsAResponseNotAnError) {
  TestHttpServer server(http_response(404, "no such job"));
  Request req;
  req.method = "DELETE";
  req.url = server.url("/job/17");
  auto r = client()->send(req);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "no such job");
  EXPECT_EQ(server.requests().at(0).rfind("DELETE /job/17 HTTP/1.1\r\n", 0), 0u);
}

TEST(CurlClient, TalksOverAUnixSocket) {
  TempDir dir;
  std::string socket_path = dir.path() + "/api.sock";
  TestHttpServer server(http_response(200, "pong"), socket_path);
  Request req;
  req.url = "http://localhost/v1/ping";
  req.unix_socket = socket_path;
  auto r = client()->send(req);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "pong");
  EXPECT_EQ(server.requests().at(0).rfind("GET /v1/ping HTTP/1.1\r\n", 0), 0u);
}

TEST(CurlClient, ConnectionRefusedIsRetryableAndKeepsSecretsOut) {
  int port = free_port();
  Request req;
  req.url = "http://alice:hunter2pw@127.0.0.1:" + std::to_string(port) + "/x?token=tok-123456";
  req.headers = {{"X-SLURM-USER-TOKEN", "eyJhbGciOiJIUzI1NiJ9.secret.sig"}};
  auto r = client()->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().retryable());
  const std::string& msg = r.error().message;
  // The one URL policy (core/secret.h): the user name stays, the password goes.
  EXPECT_NE(msg.find("GET http://alice:<redacted>@127.0.0.1:" + std::to_string(port) +
                     "/x?token=<redacted>"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("connect"), std::string::npos) << msg;  // curl's words say what failed
  for (const char* secret : {"hunter2pw", "tok-123456", "eyJhbGciOiJIUzI1NiJ9"})
    EXPECT_EQ(msg.find(secret), std::string::npos) << msg;
}

TEST(CurlClient, MissingUnixSocketIsRetryableAndNamesTheSocket) {
  TempDir dir;
  Request req;
  req.url = "http://localhost/ping";
  req.unix_socket = dir.path() + "/absent.sock";
  auto r = client()->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().retryable());
  EXPECT_NE(r.error().message.find(req.unix_socket), std::string::npos) << r.error().message;
}

TEST(CurlClient, SilentServerTimesOutAsRetryable) {
  // A socket that listens but never accepts: the connection completes in the kernel's backlog,
  // then no answer ever comes.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  Request req;
  req.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/slow";
  req.timeout_ms = 300;
  auto start = std::chrono::steady_clock::now();
  auto r = client()->send(req);
  auto took = std::chrono::steady_clock::now() - start;
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().retryable());
  EXPECT_NE(r.error().message.find("imeout"), std::string::npos) << r.error().message;
  EXPECT_LT(took, std::chrono::seconds(20));
}

}  // namespace
}  // namespace nodus::http
