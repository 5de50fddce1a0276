#include "cluster.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "billing/catalog.h"

namespace nodus::backend::slurm::testing {
namespace {

Cluster& the_cluster() {
  static Cluster c;
  return c;
}

// Runs a shell command; returns its exit status and stdout (stderr passes through).
int run(const std::string& command, std::string* out) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p))
    if (out) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string env_value(const std::string& printed, const std::string& name) {
  std::istringstream lines(printed);
  std::string line, prefix = "export " + name + "=";
  while (std::getline(lines, line))
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  return "";
}

class ClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    Cluster& c = the_cluster();
    c.script = std::string(NODUS_SOURCE_DIR) + "/scripts/slurm-dev-cluster.sh";
    std::string printed;
    if (run("bash " + c.script + " status >/dev/null 2>&1", nullptr) != 0) {
      std::fprintf(stderr, "slurm tests: starting the dev cluster with %s\n", c.script.c_str());
      if (run("bash " + c.script + " start", &printed) != 0) {
        c.why_not = "`" + c.script + " start` failed (see its output above)";
        std::fprintf(stderr, "\n*** SLURM CLUSTER COULD NOT START: Slurm tests will SKIP ***\n");
        return;
      }
      started_ = true;
    } else {
      run("bash " + c.script + " env", &printed);
    }
    c.socket_url = env_value(printed, "NODUS_SLURM_URL");
    c.slurm_conf = env_value(printed, "SLURM_CONF");
    std::string port = std::getenv("NODUS_SLURM_DEV_REST_PORT")
                           ? std::getenv("NODUS_SLURM_DEV_REST_PORT")
                           : "6820";
    c.tcp_url = "http://127.0.0.1:" + port;
    c.up = !c.socket_url.empty();
    if (!c.up) c.why_not = "`" + c.script + " env` printed no NODUS_SLURM_URL";
  }
  // Stops the cluster if this process started it for a whole run. ctest runs one test per
  // process, several at once: there the cluster stays up for the others (scripts/test.sh starts
  // and stops it around ctest).
  void TearDown() override {
    bool whole_run = ::testing::GTEST_FLAG(filter) == "*";
    if (started_ && whole_run)
      run("bash " + the_cluster().script + " stop >/dev/null 2>&1", nullptr);
    else if (started_)
      std::fprintf(stderr, "slurm tests: the dev cluster stays up; stop it with %s stop\n",
                   the_cluster().script.c_str());
  }

 private:
  bool started_ = false;
};

[[maybe_unused]] auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);

}  // namespace

const Cluster& cluster() { return the_cluster(); }

int slurm_command(const std::string& command, std::string* out) {
  return run("SLURM_CONF='" + cluster().slurm_conf + "' " + command, out);
}

std::string Cluster::token(const std::string& for_user, int seconds) const {
  std::string out;
  run("bash " + script + " token " + for_user + " " + std::to_string(seconds), &out);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

JobDir::JobDir() {
  char tmpl[] = "/tmp/nodus-slurm-test-XXXXXX";
  path_ = mkdtemp(tmpl);
  chmod(path_.c_str(), 01777);  // jobs run as the slurmrestd user, not as this process
}

JobDir::~JobDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string JobDir::read(const std::string& file) const {
  return slurp(file.rfind('/', 0) == 0 ? file : path_ + "/" + file);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

double h100_rate() { return (*billing::Catalog::builtin().lookup("H100"))->usd_per_gpu_hour; }

std::string usd(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "%.6f", v);
  return out;
}

SlurmSettings cluster_settings(const JobDir& dir, const std::string& url, const std::string& jwt,
                               const std::string& user) {
  auto s = make_settings(url.empty() ? cluster().socket_url : url, jwt, user, "v0.0.38", "",
                         dir.path(), "");
  if (!s) throw std::runtime_error(s.error().message);
  return *s;
}

std::unique_ptr<RestClient> cluster_client(const SlurmSettings& settings) {
  auto http = http::make_curl_client();
  if (!http) throw std::runtime_error(http.error().message);
  return std::make_unique<RestClient>(settings, std::move(*http), std::move(*make_api("v0.0.38")));
}

std::unique_ptr<Backend> cluster_backend(const SlurmSettings& settings) {
  return make_slurm_backend(cluster_client(settings));
}

JobRecord new_job(std::vector<std::string> argv, const JobDir& dir) {
  static std::atomic<int64_t> next{1};
  JobRecord job;
  job.id = static_cast<int64_t>(getpid()) * 1000 + next++;  // distinct across test processes
  job.created_at = unix_now();
  job.backend = "slurm";
  job.argv = std::move(argv);
  job.workdir = dir.path();
  return job;
}

std::optional<Outcome> wait_to_end(Backend& backend, JobRecord& job, double limit_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (std::chrono::steady_clock::now() < end) {
    auto event = backend.wait(job, std::chrono::steady_clock::now() + std::chrono::seconds(1), -1);
    if (!event) {
      ADD_FAILURE() << "wait failed: " << event.error().message;
      return std::nullopt;
    }
    if (event->kind == Event::Kind::kExited) return event->outcome;
  }
  ADD_FAILURE() << "job " << job.backend_id << " did not end within " << limit_s << " s";
  return std::nullopt;
}

std::optional<SlurmJob> poll_until(RestClient& rest, int64_t id,
                                   const std::function<bool(const SlurmJob&)>& done,
                                   double limit_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (std::chrono::steady_clock::now() < end) {
    auto records = rest.job(id);
    if (records)
      for (const auto& r : *records)
        if (r.job_id == id && done(r)) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

}  // namespace nodus::backend::slurm::testing
