#pragma once
// RestClient sends slurmrestd requests and turns its answers into Results: the one place that
// knows about auth headers, HTTP statuses, Slurm's error lists and retrying. Its messages name
// the endpoint (socket path or redacted URL) and quote Slurm's own words; the token is scrubbed
// from anything that could echo it.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/slurm/api.h"
#include "backend/slurm/settings.h"
#include "core/http.h"
#include "core/result.h"

namespace nodus::backend::slurm {

// Slurm's "Invalid job id specified": the job never existed or was purged (MinJobAge).
inline constexpr int64_t kInvalidJobId = 2017;
// "Job can not be altered now": e.g. a signal for a job that is still queued.
inline constexpr int64_t kCannotAlterNow = 2020;
// slurmrestd's "Nothing found with query": accounting has no such job.
inline constexpr int64_t kNothingFound = 9003;

// What a DELETE achieved.
enum class Delivery { kDone, kUnknownJob, kNotRunning };

// Retries of idempotent requests (GET, DELETE) after transient failures: refused or timed-out
// connections, 502/503/504, Slurm's communication errors. Delays double from first_delay.
struct RetryPolicy {
  int attempts = 4;
  std::chrono::milliseconds first_delay{250};
  std::chrono::milliseconds max_delay{2000};
};

class RestClient {
 public:
  RestClient(SlurmSettings settings, std::unique_ptr<http::Client> http,
             std::unique_ptr<SlurmApi> api, RetryPolicy retry = {});

  const SlurmSettings& settings() const { return settings_; }
  const SlurmApi& api() const { return *api_; }

  // One POST, never retried: a submit whose answer was lost may have created the job, so the
  // caller looks for it by name before submitting again.
  Result<int64_t> submit(const SubmitRequest& request);
  // GET /job/{id}: the job's records (all tasks for an array job); empty when Slurm does not
  // know the id (never existed, or finished more than MinJobAge ago). `retry` = false for
  // pollers that pace themselves.
  Result<std::vector<SlurmJob>> job(int64_t job_id, bool retry = true);
  // GET /jobs: every job slurmctld still knows.
  Result<std::vector<SlurmJob>> jobs(bool retry = true);
  // The job's runs in Slurm's accounting (SlurmApi::parse_accounting); empty when accounting has
  // no such job; nullopt when this slurmrestd serves no accounting (no slurmdbd on the cluster,
  // or slurmrestd started without the openapi/dbv0.0.38 plugin).
  Result<std::optional<std::vector<SlurmJob>>> accounting(int64_t job_id, bool retry = true);
  // DELETE /job/{ref}[?signal=NAME]; ref is "12" or an array task "12_3". A signal for a job
  // that does not run yet gives kNotRunning.
  Result<Delivery> cancel(std::string_view job_ref, std::string_view signal = "");
  Result<void> ping();

  // Removes the token (and the full URL, which may carry credentials) from a message.
  std::string scrub(std::string message) const;

  // The HTTP status of the last answer that refused this client's credentials (401 or 403, or
  // any failure while the token's exp has passed: Slurm 22.05 answers an expired token with a
  // 500), 0 when the last answer did not: asking again cannot help then.
  long auth_refused() const { return auth_refused_; }

 private:
  // The response of a request that slurmrestd answered with 2xx, or of one that failed with
  // one of the Slurm errors `tolerated`; everything else becomes an Error.
  Result<http::Response> send(const std::string& method, const std::string& path,
                              const std::string& body, bool retry,
                              std::vector<int64_t> tolerated = {});
  Result<http::Response> send_once(const std::string& method, const std::string& path,
                                   const std::string& body, const std::vector<int64_t>& tolerated);
  Error error_from(const std::string& method, const http::Response& response) const;

  SlurmSettings settings_;
  std::unique_ptr<http::Client> http_;
  std::unique_ptr<SlurmApi> api_;
  RetryPolicy retry_;
  std::atomic<long> auth_refused_{0};  // signal() may run on the watchdog's thread
};

// The real client for the configured endpoint: settings from the environment, libcurl.
Result<std::unique_ptr<RestClient>> connect_from_config();

}  // namespace nodus::backend::slurm
