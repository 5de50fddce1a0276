#include "engine/supervisor_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/error.h"

extern char** environ;

namespace nodus::engine {
namespace {

std::string to_hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string from_hex(const std::string& hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::invalid_argument("ticket: argv is not hex");
  };
  if (hex.size() % 2) throw std::invalid_argument("ticket: argv is not hex");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1]));
  return out;
}

}  // namespace

std::string Ticket::to_json() const {
  nlohmann::json hex_argv = nlohmann::json::array();
  for (const auto& a : argv) hex_argv.push_back(to_hex(a));
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : inventory.gpus)
    gpus.push_back({{"index", g.index}, {"type", g.type}, {"name", g.name}, {"uuid", g.uuid}});
  return nlohmann::json{{"job_id", job_id},
                        {"sweep_id", sweep_id},
                        {"env", env},
                        {"argv_hex", hex_argv},
                        {"no_wait", no_wait},
                        {"sweep_cell", sweep_cell},
                        {"parent_pid", parent_pid},
                        {"pricing", pricing},
                        {"inventory", {{"gpus", gpus}, {"source", inventory.source}}}}
      .dump();
}

Ticket Ticket::from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text);
  Ticket t;
  t.job_id = j.at("job_id").get<int64_t>();
  t.sweep_id = j.value("sweep_id", int64_t{0});
  t.env = j.value("env", std::map<std::string, std::string>{});
  for (const auto& a : j.value("argv_hex", std::vector<std::string>{}))
    t.argv.push_back(from_hex(a));
  t.no_wait = j.value("no_wait", false);
  t.sweep_cell = j.value("sweep_cell", false);
  t.parent_pid = j.value("parent_pid", int64_t{0});
  t.pricing = j.value("pricing", std::map<std::string, std::string>{});
  if (j.contains("inventory")) {
    t.inventory.source = j["inventory"].value("source", "");
    for (const auto& g : j["inventory"]["gpus"])
      t.inventory.gpus.push_back({g.at("index").get<int>(), g.at("type").get<std::string>(),
                                  g.value("name", ""), g.value("uuid", "")});
  }
  return t;
}

Result<SupervisorProcess> start_supervisor_process(bool own_session) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return Error::permanent(std::string("cannot find the nodus binary: ") + std::strerror(errno));
  exe[n] = '\0';

  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0)
    return Error::permanent(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int err = errno;
    close(in[0]);
    close(in[1]);
    return Error::permanent(std::string("pipe: ") + std::strerror(err));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  short flags = POSIX_SPAWN_SETSIGMASK;
  if (own_session) flags |= POSIX_SPAWN_SETSID;
  posix_spawnattr_setflags(&attr, flags);

  char arg0[] = "nodus";
  char arg1[] = "__supervise";
  char* argv[] = {arg0, arg1, nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe, &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return Error::permanent(std::string("cannot start the supervisor: ") + std::strerror(rc));
  }
  return SupervisorProcess{pid, in[1], out[0]};
}

bool write_ticket(int ticket_fd, const Ticket& ticket) {
  const std::string text = ticket.to_json();
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t w = write(ticket_fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;  // EPIPE: it died (SIGPIPE is ignored, engine/signals.h)
    p += w;
    left -= static_cast<size_t>(w);
  }
  return true;
}

Result<SpawnedSupervisor> spawn_supervisor(const Ticket& ticket) {
  // A cell's shares the sweep's session; any other outlives the terminal it came from.
  auto process = start_supervisor_process(!ticket.sweep_cell);
  if (!process.ok()) return process.error();
  (void)write_ticket(process->ticket_fd, ticket);  // one that died says so on its status pipe
  close(process->ticket_fd);
  return SpawnedSupervisor{process->pid, process->status_fd};
}

std::string status_line(const LaunchStatus& status) {
  switch (status.kind) {
    case LaunchStatus::Kind::kRunning:
      return "running";
    case LaunchStatus::Kind::kWaiting:
      return "waiting";
    case LaunchStatus::Kind::kError:
      return "error " + std::to_string(status.code ? status.code : exit_code::kNodusError) + " " +
             status.message;
    case LaunchStatus::Kind::kNone:
      break;
  }
  return "";
}

LaunchStatus parse_status_line(const std::string& line) {
  LaunchStatus s;
  if (line == "running") {
    s.kind = LaunchStatus::Kind::kRunning;
  } else if (line == "waiting") {
    s.kind = LaunchStatus::Kind::kWaiting;
  } else if (line.rfind("error ", 0) == 0) {
    std::string rest = line.substr(6);
    int code = std::atoi(rest.c_str());
    s.kind = LaunchStatus::Kind::kError;
    s.code = code ? code : exit_code::kNodusError;
    s.message = rest.substr(rest.find(' ') + 1);  // npos + 1: no code, the whole rest
  } else if (!line.empty()) {
    // An unknown word from a newer or older nodus: the job was not reported started.
    s.kind = LaunchStatus::Kind::kError;
    s.code = exit_code::kNodusError;
    s.message = "the supervisor said '" + line + "'";
  }
  return s;
}

std::string read_status_line(int fd) {
  std::string line;
  char c;
  for (;;) {
    ssize_t r = read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || c == '\n') break;
    line += c;
  }
  return line;
}

}  // namespace nodus::engine
