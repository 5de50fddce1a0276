#pragma once
// A tiny HTTP server for tests: listens on 127.0.0.1 (a free port) or on a unix socket, answers
// each of `connections` requests with one canned response, and records what it received.
// Header only so that other suites (billing) can serve catalogs with it too.

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace nodus::testing {

inline std::string http_response(int status, const std::string& body,
                                 const std::string& content_type = "application/json") {
  return "HTTP/1.1 " + std::to_string(status) + " Canned\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

class TestHttpServer {
 public:
  // TCP on 127.0.0.1, port chosen by the kernel.
  explicit TestHttpServer(std::string response, int connections = 1)
      : response_(std::move(response)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error(std::string("test server bind: ") + std::strerror(errno));
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    start(connections);
  }

  // A unix socket at `socket_path`.
  TestHttpServer(std::string response, const std::string& socket_path, int connections = 1)
      : response_(std::move(response)) {
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error(std::string("test server bind: ") + std::strerror(errno));
    start(connections);
  }

  ~TestHttpServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // The raw requests received so far (request line, headers, body).
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void start(int connections) {
    if (listen(fd_, 8) != 0)
      throw std::runtime_error(std::string("test server listen: ") + std::strerror(errno));
    thread_ = std::thread([this, connections] {
      for (int served = 0; served < connections && !stop_;) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;  // wake up now and then to notice stop_
        int conn = accept(fd_, nullptr, nullptr);
        if (conn < 0) continue;
        std::string request = read_request(conn);
        {
          std::lock_guard lock(mutex_);
          requests_.push_back(request);
        }
        (void)!write(conn, response_.data(), response_.size());
        close(conn);
        ++served;
      }
    });
  }

  // Reads headers and a Content-Length body, giving up after 30 s of silence.
  static std::string read_request(int conn) {
    std::string data;
    char buf[4096];
    size_t want = std::string::npos;
    while (data.size() < want) {
      pollfd p{conn, POLLIN, 0};
      if (poll(&p, 1, 30'000) <= 0) break;
      ssize_t n = read(conn, buf, sizeof buf);
      if (n <= 0) break;
      data.append(buf, n);
      size_t end = data.find("\r\n\r\n");
      if (want == std::string::npos && end != std::string::npos) {
        size_t body = end + 4;
        size_t length = 0;
        size_t at = data.find("Content-Length:");
        if (at == std::string::npos) at = data.find("content-length:");
        if (at != std::string::npos && at < end) length = std::strtoul(&data[at + 15], nullptr, 10);
        want = body + length;
      }
    }
    return data;
  }

  std::string response_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace nodus::testing
