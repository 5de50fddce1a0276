#include "core/http.h"

#include <algorithm>
#include <mutex>

#include "core/curl_api.h"
#include "core/secret.h"

namespace nodus::http {
namespace {

// libcurl (core/curl_api.h), with curl_global_init run once before the first transfer; later calls
// return the same table or the same error.
Result<const curl::Api*> load_curl() {
  static std::string error;
  static std::once_flag once;
  auto api = curl::load();
  if (!api.ok()) return Error::permanent(api.error().message + " (needed for HTTP)");
  // curl_global_init is not thread-safe in older libcurl: call_once makes it run exactly once.
  std::call_once(once, [&] {
    if (CURLcode rc = (*api)->global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
      error = std::string("curl_global_init failed: ") + (*api)->easy_strerror(rc);
  });
  if (!error.empty()) return Error::permanent(error);
  return api;
}

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// Replaces every occurrence of `secret` in `text` by "<redacted>".
void scrub(std::string& text, std::string_view secret) {
  if (secret.size() < 4) return;  // too short to be a credential; replacing would mangle words
  for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
    text.replace(at, secret.size(), "<redacted>");
}

class CurlClient : public Client {
 public:
  explicit CurlClient(const curl::Api& api) : api_(api) {}

  Result<Response> send(const Request& request) override {
    CURL* curl = api_.easy_init();
    if (curl == nullptr) return Error::retryable("curl_easy_init failed for " + target(request));
    curl_slist* headers = nullptr;
    for (const auto& [name, value] : request.headers)
      headers = api_.slist_append(headers, (name + ": " + value).c_str());

    Response response;
    char detail[CURL_ERROR_SIZE] = {};
    set(curl, CURLOPT_URL, request.url.c_str());
    set(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts must not use SIGALRM in a multi-threaded process
    set(curl, CURLOPT_TIMEOUT_MS, request.timeout_ms);
    set(curl, CURLOPT_CONNECTTIMEOUT_MS, request.connect_timeout_ms);
    set(curl, CURLOPT_ERRORBUFFER, detail);
    set(curl, CURLOPT_WRITEFUNCTION, &append_body);
    set(curl, CURLOPT_WRITEDATA, &response.body);
    set(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!request.unix_socket.empty())
      set(curl, CURLOPT_UNIX_SOCKET_PATH, request.unix_socket.c_str());
    if (headers != nullptr) set(curl, CURLOPT_HTTPHEADER, headers);
    // Redirects are followed only for plain fetches: curl would resend custom headers (tokens)
    // to whatever host a redirect names.
    if (request.headers.empty() && (request.method == "GET" || request.method == "HEAD")) {
      set(curl, CURLOPT_FOLLOWLOCATION, 1L);
      set(curl, CURLOPT_MAXREDIRS, 5L);
      set(curl, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    }
    if (request.method == "HEAD") {
      set(curl, CURLOPT_NOBODY, 1L);
    } else if (request.method != "GET" || !request.body.empty()) {
      if (request.method == "POST" || !request.body.empty()) {
        set(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
        set(curl, CURLOPT_POSTFIELDS, request.body.c_str());
      }
      if (request.method != "POST") set(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }

    CURLcode rc = api_.easy_perform(curl);
    if (rc == CURLE_OK) api_.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    api_.easy_cleanup(curl);
    api_.slist_free_all(headers);
    if (rc != CURLE_OK) return Error::retryable(describe(request, rc, detail));
    return response;
  }

 private:
  template <typename T>
  void set(CURL* curl, CURLoption option, T value) {
    api_.easy_setopt(curl, option, value);
  }

  static std::string target(const Request& request) {
    std::string text = request.method + " " + redact_url(request.url);
    if (!request.unix_socket.empty()) text += " via unix socket " + request.unix_socket;
    return text;
  }

  // "<METHOD> <redacted url>: <curl's words> (<curl's detail>)", with any credential that curl
  // might have echoed scrubbed out.
  std::string describe(const Request& request, CURLcode rc, const char* detail) const {
    std::string words = api_.easy_strerror(rc);
    if (detail[0] != '\0' && words != detail) words += std::string(" (") + detail + ")";
    scrub(words, request.url);
    if (auto at = request.url.find('@'); at != std::string::npos) {
      auto start = request.url.find("://");
      start = start == std::string::npos ? 0 : start + 3;
      if (start < at) scrub(words, std::string_view(request.url).substr(start, at - start));
    }
    for (const auto& header : request.headers) scrub(words, header.second);
    return target(request) + ": " + words;
  }

  const curl::Api& api_;
};

}  // namespace

std::string redact_url(std::string_view url) { return redact_urls(url); }

Result<std::unique_ptr<Client>> make_curl_client() {
  auto api = load_curl();
  if (!api.ok()) return api.error();
  return std::unique_ptr<Client>(std::make_unique<CurlClient>(**api));
}

}  // namespace nodus::http
