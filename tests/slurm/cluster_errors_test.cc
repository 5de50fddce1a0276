// Failures against the real cluster: slurmrestd unreachable, authentication over JWT, and the
// token never showing up anywhere it should not.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cluster.h"

namespace nodus::backend::slurm {
namespace {

using namespace testing;

// A TCP port on 127.0.0.1 that nothing listens on.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A unix socket file whose server is gone (as after slurmrestd died).
std::string stale_socket(const JobDir& dir) {
  std::string path = dir.path() + "/dead.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  close(fd);
  return path;
}

void expect_unreachable(const std::string& url, const std::string& names) {
  JobDir dir;
  auto backend = cluster_backend(cluster_settings(dir, url));
  JobRecord job = new_job({"true"}, dir);
  auto t0 = std::chrono::steady_clock::now();
  auto r = backend->submit(job, quiet());
  ASSERT_FALSE(r.ok()) << url;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));  // bounded retries
  EXPECT_EQ(r.error().exit_code, 125);
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  EXPECT_NE(r.error().message.find(names), std::string::npos) << r.error().message;
  EXPECT_TRUE(job.backend_id.empty());
}

TEST(SlurmClusterErrors, RestdDownIsAClearErrorNamingTheEndpoint) {
  REQUIRE_SLURM_CLUSTER();
  expect_unreachable("unix:///tmp/nodus-no-such-dir/slurmrestd.sock",
                     "/tmp/nodus-no-such-dir/slurmrestd.sock: the socket does not exist");
  JobDir dir;
  std::string dead = stale_socket(dir);
  expect_unreachable("unix://" + dead, "cannot reach slurmrestd at unix socket " + dead);
  std::string port = std::to_string(free_port());
  expect_unreachable("http://127.0.0.1:" + port,
                     "cannot reach slurmrestd at http://127.0.0.1:" + port);
}

TEST(SlurmClusterErrors, ValidTokenOverTcpRunsTheJobAsItsUser) {
  REQUIRE_SLURM_CLUSTER();
  std::string token = cluster().token(cluster().user);
  ASSERT_FALSE(token.empty());
  JobDir dir;
  auto backend = cluster_backend(cluster_settings(dir, cluster().tcp_url, token, cluster().user));
  JobRecord job = new_job({"id", "-un"}, dir);
  auto submitted = backend->submit(job, quiet());
  ASSERT_TRUE(submitted.ok()) << submitted.error().message;
  auto outcome = wait_to_end(*backend, job, 60);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_EQ(dir.read(job.log_path), cluster().user + "\n");
}

TEST(SlurmClusterErrors, MissingOrWrongTokenIsRejectedWithoutEchoingIt) {
  REQUIRE_SLURM_CLUSTER();
  JobDir dir;
  auto no_token = cluster_backend(cluster_settings(dir, cluster().tcp_url, "", cluster().user));
  JobRecord job = new_job({"true"}, dir);
  auto r401 = no_token->submit(job, quiet());
  ASSERT_FALSE(r401.ok());
  EXPECT_NE(r401.error().message.find("HTTP 401"), std::string::npos) << r401.error().message;
  EXPECT_NE(r401.error().message.find("SLURM_JWT is not set"), std::string::npos);

  // A well-formed token signed with another key, and a real one for another user. (A root
  // token would pass: slurmctld lets root act as anyone.)
  const std::string forged =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
      "eyJleHAiOjQxMDI0NDQ4MDAsImlhdCI6MTcwMDAwMDAwMCwic3VuIjoibm9kdXMtcmVzdGQifQ."
      "c2lnbmF0dXJlLW5vdC12YWxpZC1mb3ItdGhpcy1rZXk";
  const std::string for_nobody = cluster().token("nobody");
  ASSERT_FALSE(for_nobody.empty());
  for (const std::string& token : {forged, for_nobody}) {
    auto backend = cluster_backend(cluster_settings(dir, cluster().tcp_url, token, cluster().user));
    JobRecord j = new_job({"true"}, dir);
    auto r = backend->submit(j, quiet());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().exit_code, 125);
    EXPECT_EQ(r.error().message.find(token), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("http://127.0.0.1"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("token was rejected"), std::string::npos) << r.error().message;
    EXPECT_TRUE(j.backend_id.empty());
  }
}

TEST(SlurmClusterErrors, TokenNeverReachesTheJobOrItsRecord) {
  REQUIRE_SLURM_CLUSTER();
  std::string token = cluster().token(cluster().user);
  JobDir dir;
  auto backend = cluster_backend(cluster_settings(dir, cluster().tcp_url, token, cluster().user));
  JobRecord job = new_job({"env"}, dir);
  LaunchSpec spec = quiet();
  spec.env = {{"SLURM_JWT", token}, {"NODUS_JOB_ID", "1"}};
  ASSERT_TRUE(backend->submit(job, spec).ok());
  auto outcome = wait_to_end(*backend, job, 60);
  ASSERT_TRUE(outcome);
  std::string env = dir.read(job.log_path);
  EXPECT_NE(env.find("NODUS_JOB_ID=1"), std::string::npos);
  EXPECT_EQ(env.find(token), std::string::npos);
  for (const std::string& field :
       {job.backend_id, job.log_path, job.note, job.options->dump(), job.workdir, job.image})
    EXPECT_EQ(field.find(token), std::string::npos);
  for (const auto& [k, v] : job.env) EXPECT_EQ(v.find(token), std::string::npos);
}

}  // namespace
}  // namespace nodus::backend::slurm
