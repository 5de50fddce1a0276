#include "backend/slurm/rest.h"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <thread>

namespace nodus::backend::slurm {
namespace {

// Slurm's communication errors (1000-1099: slurmctld connection; 5000-5099: socket layer) mean
// "try again", as does a proxy's 502/503/504.
bool is_transient(const std::vector<SlurmError>& errors) {
  for (const auto& e : errors)
    if ((e.code >= 1000 && e.code < 1100) || (e.code >= 5000 && e.code < 5100)) return true;
  return false;
}

bool has_code(const std::vector<SlurmError>& errors, int64_t code) {
  return std::any_of(errors.begin(), errors.end(), [&](const auto& e) { return e.code == code; });
}

std::string first_line(std::string_view text, size_t limit = 200) {
  text = text.substr(0, text.find('\n'));
  std::string out(text.substr(0, limit));
  if (text.size() > limit) out += "...";
  return out;
}

}  // namespace

RestClient::RestClient(SlurmSettings settings, std::unique_ptr<http::Client> http,
                       std::unique_ptr<SlurmApi> api, RetryPolicy retry)
    : settings_(std::move(settings)), http_(std::move(http)), api_(std::move(api)), retry_(retry) {}

std::string RestClient::scrub(std::string message) const {
  // The URL is a secret only when it carries credentials (user:password@, token=...).
  std::string url = http::redact_url(settings_.url) == settings_.url ? "" : settings_.url;
  for (const std::string& secret : {settings_.jwt, url}) {
    if (secret.size() < 8) continue;
    for (size_t at = message.find(secret); at != std::string::npos; at = message.find(secret, at))
      message.replace(at, secret.size(), "<redacted>");
  }
  return message;
}

Result<http::Response> RestClient::send_once(const std::string& method, const std::string& path,
                                             const std::string& body,
                                             const std::vector<int64_t>& tolerated) {
  auth_refused_ = 0;  // this request's answer decides
  struct stat st {};
  if (!settings_.unix_socket.empty() && stat(settings_.unix_socket.c_str(), &st) != 0)
    return Error::retryable(settings_.describe() +
                            ": the socket does not exist (is slurmrestd running?)");
  http::Request request;
  request.method = method;
  request.url = settings_.base_url + path;
  request.unix_socket = settings_.unix_socket;
  request.headers.emplace_back("Accept", "application/json");
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  if (!settings_.user.empty()) request.headers.emplace_back("X-SLURM-USER-NAME", settings_.user);
  if (settings_.uses_jwt() && !settings_.jwt.empty())
    request.headers.emplace_back("X-SLURM-USER-TOKEN", settings_.jwt);
  request.body = body;

  auto response = http_->send(request);
  if (!response)
    return Error::retryable(
        scrub("cannot reach " + settings_.describe() + ": " + response.error().message));
  auth_refused_ = response->status == 401 || response->status == 403 ? response->status : 0;
  if (response->status >= 200 && response->status < 300) return std::move(*response);
  auto errors = api_->errors(response->body);
  for (int64_t code : tolerated)
    if (has_code(errors, code)) return std::move(*response);
  // Slurm 22.05 answers a request with an expired token with HTTP 500 and a communication error
  // (5005, which reads as an outage) or a generic one: asking again cannot help.
  if (auto exp = settings_.uses_jwt() ? jwt_expiry(settings_.jwt) : std::nullopt;
      exp && *exp <= static_cast<double>(std::time(nullptr))) {
    auth_refused_ = response->status;
    return Error::permanent(scrub(settings_.describe() + " refused " + method + " (HTTP " +
                                  std::to_string(response->status) +
                                  "): the token (SLURM_JWT) has expired; mint a new one with "
                                  "`scontrol token`"));
  }
  return error_from(method, *response);
}

Error RestClient::error_from(const std::string& method, const http::Response& response) const {
  const std::string where = settings_.describe();
  const std::string status = "HTTP " + std::to_string(response.status);
  auto errors = api_->errors(response.body);
  if (response.status == 401 || response.status == 403) {
    std::string hint;
    if (!settings_.uses_jwt())
      hint = "rest_auth/local accepts only root and the user slurmrestd runs as" +
             (settings_.user.empty() ? std::string()
                                     : "; NODUS_SLURM_USER is '" + settings_.user + "'");
    else if (settings_.jwt.empty())
      hint = "SLURM_JWT is not set (mint a token with `scontrol token`)";
    else
      hint = "check SLURM_JWT (expired?) and NODUS_SLURM_USER ('" + settings_.user + "')";
    return Error::permanent(scrub(where + " refused authentication (" + status + "): " + hint));
  }
  if (!errors.empty()) {
    std::string words = to_string(errors);
    // slurmrestd passes a token on and slurmctld drops the connection when it cannot verify it
    // (expired, signed with another key, or for another user than X-SLURM-USER-NAME): that
    // comes back as a generic failure (-1) or "Zero Bytes were transmitted" (5005), not a 401.
    bool token_suspect = std::any_of(errors.begin(), errors.end(), [](const SlurmError& e) {
      return e.code == -1 || e.code == 5005;
    });
    if (settings_.uses_jwt() && token_suspect)
      words +=
          " (over JWT this usually means the token was rejected: check SLURM_JWT and "
          "NODUS_SLURM_USER)";
    std::string message = scrub(where + ": " + words);
    return is_transient(errors) ? Error::retryable(message) : Error::permanent(message);
  }
  std::string message = scrub(where + " answered " + method + " with " + status +
                              (response.body.empty() ? "" : ": " + first_line(response.body)));
  if (response.status == 502 || response.status == 503 || response.status == 504)
    return Error::retryable(message);
  return Error::permanent(message);
}

Result<http::Response> RestClient::send(const std::string& method, const std::string& path,
                                        const std::string& body, bool retry,
                                        std::vector<int64_t> tolerated) {
  auto delay = retry_.first_delay;
  for (int attempt = 1;; ++attempt) {
    auto response = send_once(method, path, body, tolerated);
    if (response || !response.error().retryable() || !retry || attempt >= retry_.attempts)
      return response;
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, retry_.max_delay);
  }
}

Result<int64_t> RestClient::submit(const SubmitRequest& request) {
  auto response = send("POST", api_->submit_path(), api_->submit_body(request), false);
  if (!response) return response.error();
  auto id = api_->parse_submit(response->body);
  if (!id) return Error::permanent(scrub(settings_.describe() + ": " + id.error().message));
  return id;
}

Result<std::vector<SlurmJob>> RestClient::job(int64_t job_id, bool retry) {
  auto response = send("GET", api_->job_path(job_id), "", retry, {kInvalidJobId});
  if (!response) return response.error();
  if (has_code(api_->errors(response->body), kInvalidJobId)) return std::vector<SlurmJob>{};
  return api_->parse_jobs(response->body);
}

Result<std::optional<std::vector<SlurmJob>>> RestClient::accounting(int64_t job_id, bool retry) {
  auto response = send("GET", api_->accounting_path(job_id), "", retry, {kNothingFound});
  if (!response) {
    // slurmrestd answers 404 for a path no loaded plugin serves.
    if (response.error().message.find("HTTP 404") != std::string::npos)
      return std::optional<std::vector<SlurmJob>>();
    return response.error();
  }
  if (has_code(api_->errors(response->body), kNothingFound))
    return std::optional<std::vector<SlurmJob>>(std::vector<SlurmJob>{});
  auto runs = api_->parse_accounting(response->body);
  if (!runs) return runs.error();
  return std::optional<std::vector<SlurmJob>>(std::move(*runs));
}

Result<std::vector<SlurmJob>> RestClient::jobs(bool retry) {
  auto response = send("GET", api_->jobs_path(), "", retry);
  if (!response) return response.error();
  return api_->parse_jobs(response->body);
}

Result<Delivery> RestClient::cancel(std::string_view job_ref, std::string_view signal) {
  std::vector<int64_t> tolerated = {kInvalidJobId};
  if (!signal.empty()) tolerated.push_back(kCannotAlterNow);
  auto response = send("DELETE", api_->cancel_path(job_ref, signal), "", true, tolerated);
  if (!response) return response.error();
  auto errors = api_->errors(response->body);
  if (has_code(errors, kInvalidJobId)) return Delivery::kUnknownJob;
  if (has_code(errors, kCannotAlterNow)) return Delivery::kNotRunning;
  return Delivery::kDone;
}

Result<void> RestClient::ping() {
  auto response = send("GET", api_->ping_path(), "", true);
  if (!response) return response.error();
  auto errors = api_->errors(response->body);
  if (!errors.empty())
    return Error::permanent(scrub(settings_.describe() + ": " + to_string(errors)));
  return {};
}

Result<std::unique_ptr<RestClient>> connect_from_config() {
  auto settings = settings_from_config();
  if (!settings) return settings.error();
  auto api = make_api(settings->api);
  if (!api) return api.error();
  auto http = http::make_curl_client();
  if (!http) return http.error();
  return std::make_unique<RestClient>(std::move(*settings), std::move(*http), std::move(*api));
}

}  // namespace nodus::backend::slurm
