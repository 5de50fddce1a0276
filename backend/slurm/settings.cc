#include "backend/slurm/settings.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/config.h"
#include "core/http.h"
#include "core/json_input.h"
#include "core/parse.h"
#include "core/strings.h"

namespace nodus::backend::slurm {

std::optional<double> jwt_expiry(std::string_view token) {
  size_t first = token.find('.');
  size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || second - first - 1 > 8192) return std::nullopt;
  std::string_view payload = token.substr(first + 1, second - first - 1);
  // base64url without padding.
  std::string json;
  uint32_t bits = 0;
  int count = 0;
  for (char c : payload) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '-'             ? 62
            : c == '_'             ? 63
                                   : -1;
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if ((count += 6) >= 8) {
      count -= 8;
      json += static_cast<char>((bits >> count) & 0xff);
    }
  }
  auto claims = parse_untrusted_json(json);
  if (!claims.is_object() || !claims.contains("exp") || !claims["exp"].is_number())
    return std::nullopt;
  return claims["exp"].get<double>();
}
namespace {

std::string login_name() {
  if (const passwd* pw = getpwuid(geteuid())) return pw->pw_name;
  if (const char* user = std::getenv("USER"); user && *user) return user;
  return "";
}

bool is_tag(const std::string& s) {
  return s.size() == 8 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::string random_tag() {
  std::random_device device;  // /dev/urandom on Linux
  char out[9];
  std::snprintf(out, sizeof out, "%08x", static_cast<unsigned>(device()));
  return out;
}

Result<std::string> store_tag_in(const std::string& home) {
  const std::string path = home + "/slurm-store-tag";
  auto stored = [&path] {
    std::string tag;
    std::ifstream in(path);
    in >> tag;
    return tag;
  };
  if (std::string tag = stored(); is_tag(tag)) return tag;
  mkdir(home.c_str(), 0700);  // nodus creates it with the store; first use may come first
  // Write a candidate aside and link it into place: of two first uses, one wins and both read it.
  std::string tag = random_tag();
  std::string tmp = path + "." + std::to_string(getpid()) + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return Error::permanent("cannot create " + tmp + " (nodus names its Slurm jobs with a tag " +
                            "kept in NODUS_HOME): " + std::strerror(errno));
  std::string line = tag + "\n";
  bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (written) link(tmp.c_str(), path.c_str());
  unlink(tmp.c_str());
  if (std::string winner = stored(); is_tag(winner)) return winner;
  return Error::permanent("cannot read back " + path + ": it should hold 8 hex digits");
}

std::string SlurmSettings::describe() const {
  if (!unix_socket.empty()) return "slurmrestd at unix socket " + unix_socket;
  return "slurmrestd at " + http::redact_url(url);
}

std::string SlurmSettings::gres_type(std::string_view catalog_type) const {
  if (auto it = gres_map.find(to_upper(catalog_type)); it != gres_map.end()) return it->second;
  std::string_view first = catalog_type.substr(0, catalog_type.find_first_of("- _"));
  return to_lower(first);
}

Result<std::map<std::string, std::string>> parse_gres_map(std::string_view text) {
  std::map<std::string, std::string> map;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string entry(trim(text.substr(start, end - start)));
    if (!entry.empty()) {
      size_t eq = entry.find('=');
      std::string type(eq == std::string::npos ? "" : trim(std::string_view(entry).substr(0, eq)));
      std::string gres(eq == std::string::npos ? "" : trim(std::string_view(entry).substr(eq + 1)));
      if (type.empty() || gres.empty() || gres.find_first_of(":, ") != std::string::npos)
        return Error::permanent("NODUS_SLURM_GRES: invalid entry '" + entry +
                                "': expected TYPE=gres_type pairs, e.g. H100-SXM=h100,L4=l4");
      map[to_upper(type)] = gres;
    }
    start = end + 1;
  }
  return map;
}

Result<SlurmSettings> make_settings(std::string_view url, std::string jwt, std::string user,
                                    std::string api, std::string_view gres_map, std::string workdir,
                                    std::string partition) {
  SlurmSettings s;
  constexpr std::string_view kUnix = "unix://";
  if (url.empty())
    return Error::permanent(
        "NODUS_SLURM_URL is not set: point it at slurmrestd, e.g. "
        "unix:///run/slurmrestd/slurmrestd.sock or http://host:6820");
  if (url.substr(0, kUnix.size()) == kUnix) {
    s.unix_socket = std::string(url.substr(kUnix.size()));
    if (s.unix_socket.empty() || s.unix_socket[0] != '/')
      return Error::permanent("NODUS_SLURM_URL: invalid value '" + std::string(url) +
                              "': a unix socket URL needs an absolute path, e.g. "
                              "unix:///run/slurmrestd/slurmrestd.sock");
    s.base_url = "http://localhost";
  } else if (url.substr(0, 7) == "http://" || url.substr(0, 8) == "https://") {
    s.base_url = std::string(url);
    while (!s.base_url.empty() && s.base_url.back() == '/') s.base_url.pop_back();
  } else {
    return Error::permanent("NODUS_SLURM_URL: invalid value '" + http::redact_url(url) +
                            "': expected unix:///path/to/slurmrestd.sock or http(s)://host:port");
  }
  s.url = std::string(url);
  s.jwt = std::move(jwt);
  s.user = s.uses_jwt() && user.empty() ? login_name() : std::move(user);
  if (!api.empty()) s.api = std::move(api);
  auto map = parse_gres_map(gres_map);
  if (!map) return map.error();
  s.gres_map = std::move(*map);
  if (!workdir.empty()) s.workdir = std::move(workdir);
  while (s.workdir.size() > 1 && s.workdir.back() == '/') s.workdir.pop_back();
  if (s.workdir.empty() || s.workdir[0] != '/')
    return Error::permanent("NODUS_SLURM_WORKDIR: invalid value '" + s.workdir +
                            "': expected an absolute path");
  s.partition = std::move(partition);
  static const std::string process_tag = random_tag();  // settings_from_config: the store's
  s.store_tag = process_tag;
  return s;
}

Result<SlurmSettings> settings_from_config() {
  auto s = make_settings(config_get("slurm_url"), config_get("slurm_jwt"), config_get("slurm_user"),
                         config_get("slurm_api"), config_get("slurm_gres_map"),
                         config_get("slurm_workdir"), config_get("slurm_partition"));
  if (!s) return s;
  auto tag = store_tag_in(nodus_home());
  if (!tag) return tag.error();
  s->store_tag = *tag;
  return s;
}

}  // namespace nodus::backend::slurm
