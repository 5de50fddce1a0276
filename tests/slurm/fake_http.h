#pragma once
// Test doubles for the Slurm backend's unit tests: a scripted HTTP client and fixture loading.

#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/slurm/rest.h"
#include "core/http.h"

namespace nodus::backend::slurm::testing {

inline std::string fixture(const std::string& name) {
  std::ifstream in(std::string(NODUS_TEST_DATA) + "/slurm/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline http::Response reply(long status, std::string body) { return {status, std::move(body)}; }

// Answers each request with `handler`; records every request. State is shared so that tests
// keep a handle after the client moved into a RestClient.
class FakeHttp : public http::Client {
 public:
  struct State {
    std::function<Result<http::Response>(const http::Request&)> handler;
    std::vector<http::Request> requests;
    int count(const std::string& method, const std::string& path_part) const {
      int n = 0;
      for (const auto& r : requests)
        if (r.method == method && r.url.find(path_part) != std::string::npos) ++n;
      return n;
    }
  };
  explicit FakeHttp(std::shared_ptr<State> state) : state_(std::move(state)) {}
  Result<http::Response> send(const http::Request& request) override {
    state_->requests.push_back(request);
    return state_->handler(request);
  }

 private:
  std::shared_ptr<State> state_;
};

inline SlurmSettings settings_for(const std::string& url, const std::string& jwt = "",
                                  const std::string& user = "") {
  auto s = make_settings(url, jwt, user, "v0.0.38", "", "/tmp/nodus-slurm-test-jobs", "");
  if (!s) throw std::runtime_error(s.error().message);
  return *s;
}

inline RetryPolicy fast_retries() {
  return {3, std::chrono::milliseconds(1), std::chrono::milliseconds(2)};
}

inline std::unique_ptr<RestClient> fake_client(std::shared_ptr<FakeHttp::State> state,
                                               SlurmSettings settings) {
  return std::make_unique<RestClient>(std::move(settings), std::make_unique<FakeHttp>(state),
                                      std::move(*make_api("v0.0.38")), fast_retries());
}

}  // namespace nodus::backend::slurm::testing
