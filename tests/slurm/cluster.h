#pragma once
// The real Slurm cluster the integration tests run against (two nodes, dev1 and dev2, both on
// this machine): started once per test executable with scripts/slurm-dev-cluster.sh when it is
// not up (and stopped after a whole run that started it). When it cannot start, integration
// tests skip with a loud message saying why.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/slurm/job_states.h"
#include "backend/slurm/rest.h"
#include "backend/slurm/slurm_backend.h"
#include "core/job.h"

namespace nodus::backend::slurm::testing {

struct Cluster {
  bool up = false;
  std::string why_not;     // when not up
  std::string socket_url;  // unix:///.../slurmrestd.sock (rest_auth/local)
  std::string tcp_url;     // http://127.0.0.1:PORT (rest_auth/jwt)
  std::string user = "nodus-restd";
  std::string script;
  std::string slurm_conf;  // $SLURM_CONF for Slurm's own commands (scontrol, sacct)
  // A fresh JWT for `user` from `scontrol token`.
  std::string token(const std::string& for_user, int seconds = 600) const;
};
const Cluster& cluster();

// The whole of a file ("" when it cannot be read).
std::string slurp(const std::string& path);
// The catalog's H100 rate, USD per GPU-hour.
double h100_rate();
// Dollars as the tests compare them: six decimals.
std::string usd(double v);

// Runs a shell command with the cluster's SLURM_CONF; returns its exit status and, in `out`, its
// stdout (stderr passes through).
int slurm_command(const std::string& command, std::string* out = nullptr);

#define REQUIRE_SLURM_CLUSTER()                                                            \
  do {                                                                                     \
    if (!::nodus::backend::slurm::testing::cluster().up)                                   \
      GTEST_SKIP() << "\n*** SLURM CLUSTER NOT AVAILABLE: THIS TEST DID NOT RUN ***\n*** " \
                   << ::nodus::backend::slurm::testing::cluster().why_not << "\n";         \
  } while (0)

// A folder for one test, writable by the user Slurm runs jobs as; removed afterwards.
class JobDir {
 public:
  JobDir();
  ~JobDir();
  const std::string& path() const { return path_; }
  std::string read(const std::string& file) const;

 private:
  std::string path_;
};

// Settings for the socket endpoint (or `url` with `jwt`) with the workdir in `dir`.
SlurmSettings cluster_settings(const JobDir& dir, const std::string& url = "",
                               const std::string& jwt = "", const std::string& user = "");
std::unique_ptr<RestClient> cluster_client(const SlurmSettings& settings);
std::unique_ptr<Backend> cluster_backend(const SlurmSettings& settings);

// A launch that does not copy the job's output to the test's stdout.
inline LaunchSpec quiet() {
  LaunchSpec spec;
  spec.attach = false;
  return spec;
}

// A job record with a fresh id and creation time (so its Slurm name is new).
JobRecord new_job(std::vector<std::string> argv, const JobDir& dir);

// Waits (as the engine does) until the job ends or `limit_s` passes; kStarted events are noted
// in the record. Fails the test on an error.
std::optional<Outcome> wait_to_end(Backend& backend, JobRecord& job, double limit_s);

// Polls Slurm directly every 50 ms until the job's state satisfies `done` or `limit_s` passes.
std::optional<SlurmJob> poll_until(RestClient& rest, int64_t id,
                                   const std::function<bool(const SlurmJob&)>& done,
                                   double limit_s);

}  // namespace nodus::backend::slurm::testing
