#include "backend/slurm/settings.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "core/config.h"
#include "core/http.h"
#include "core/parse.h"

namespace nodus::backend::slurm {
namespace {

std::string login_name() {
  if (const passwd* pw = getpwuid(geteuid())) return pw->pw_name;
  if (const char* user = std::getenv("USER"); user && *user) return user;
  return "";
}

std::string trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t");
  size_t b = s.find_last_not_of(" \t");
  return a == std::string_view::npos ? "" : std::string(s.substr(a, b - a + 1));
}

}  // namespace

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
    std::string entry = trim(text.substr(start, end - start));
    if (!entry.empty()) {
      size_t eq = entry.find('=');
      std::string type = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
      std::string gres = eq == std::string::npos ? "" : trim(entry.substr(eq + 1));
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
  return s;
}

Result<SlurmSettings> settings_from_config() {
  return make_settings(config_get("slurm_url"), config_get("slurm_jwt"), config_get("slurm_user"),
                       config_get("slurm_api"), config_get("slurm_gres_map"),
                       config_get("slurm_workdir"), config_get("slurm_partition"));
}

}  // namespace nodus::backend::slurm
