#pragma once
// A small HTTP client interface. The real one loads libcurl.so.4 with dlopen on first use, so
// commands that never speak HTTP (every `nodus run` on the local backend) do not pay the ~4 ms
// that linking libcurl adds to each process start.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace nodus::http {

struct Request {
  std::string method = "GET";
  std::string url;          // http(s)://host:port/path; with unix_socket the host is ignored
  std::string unix_socket;  // path of a unix socket to connect to instead of TCP ("" = TCP)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  long timeout_ms = 10'000;
  long connect_timeout_ms = 3'000;
};

struct Response {
  long status = 0;
  std::string body;
};

class Client {
 public:
  virtual ~Client() = default;
  // Transport failures (refused, timeout, DNS, TLS) are retryable Errors whose message names the
  // redacted URL (or socket) and curl's own words; header values never appear in messages.
  virtual Result<Response> send(const Request& request) = 0;
};

// The libcurl client. Fails with a clear Error if libcurl.so.4 cannot be loaded.
Result<std::unique_ptr<Client>> make_curl_client();

// The URL as it may be shown: core/secret.h's redact_urls, the one policy for credentials in
// URLs (the user name kept, the password and token-like parameters replaced by "<redacted>").
std::string redact_url(std::string_view url);

}  // namespace nodus::http
