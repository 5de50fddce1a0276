#pragma once
// SlurmSettings: where slurmrestd is and how to talk to it, read once from nodus's config table
// (NODUS_SLURM_URL, SLURM_JWT, NODUS_SLURM_USER, NODUS_SLURM_API, NODUS_SLURM_GRES,
// NODUS_SLURM_WORKDIR, NODUS_SLURM_PARTITION). The token lives only here and in request headers:
// describe() and every message built from these settings use the redacted endpoint.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace nodus::backend::slurm {

struct SlurmSettings {
  std::string url;          // as configured: unix:///path.sock or http(s)://host:port[/prefix]
  std::string unix_socket;  // the socket path for unix:// URLs, else ""
  std::string base_url;     // what request paths are appended to ("http://localhost" for sockets)
  std::string jwt;          // secret: sent as X-SLURM-USER-TOKEN over http(s) only
  std::string user;         // X-SLURM-USER-NAME ("" = do not send)
  std::string api = "v0.0.38";
  std::map<std::string, std::string> gres_map;  // upper-case catalog type -> GRES type
  std::string workdir = "/tmp/nodus-slurm-jobs";
  std::string partition;
  // Random hex naming this nodus store (NODUS_HOME) in Slurm job names, so that stores sharing a
  // cluster never produce the same name (each store numbers its jobs from 1).
  std::string store_tag;

  bool uses_jwt() const { return unix_socket.empty(); }
  // The endpoint for messages: the socket path or the redacted URL. Never the token.
  std::string describe() const;
  // The GRES type for a catalog GPU type: the configured mapping, else the type's first word in
  // lower case ("H100-SXM" -> "h100", "L4" -> "l4").
  std::string gres_type(std::string_view catalog_type) const;
};

// The expiry (unix seconds, the "exp" claim) of a JWT such as `scontrol token` mints; nullopt
// when `token` is not a JWT or has no exp. Nothing is verified: it only tells an expired token
// from an outage when slurmrestd's answer does not (Slurm 22.05 answers an expired token with
// HTTP 500 and "Zero Bytes were transmitted or received" (5005), not a 401).
std::optional<double> jwt_expiry(std::string_view token);

// Parses "H100-SXM=h100,L4=l4". Errors name the bad entry.
Result<std::map<std::string, std::string>> parse_gres_map(std::string_view text);

// 8 random hex digits from the kernel's generator.
std::string random_tag();
// The tag of the store in `home`: read from home/slurm-store-tag, created there (0600, atomically)
// on first use. Errors: the folder cannot hold the file.
Result<std::string> store_tag_in(const std::string& home);

// Builds settings from explicit values (tests; store_tag is random, one per process) ...
Result<SlurmSettings> make_settings(std::string_view url, std::string jwt, std::string user,
                                    std::string api, std::string_view gres_map, std::string workdir,
                                    std::string partition);
// ... or from the environment, with the tag of the store in NODUS_HOME. The user defaults to the
// login name over http(s); over a unix socket no user is sent unless configured (rest_auth/local
// trusts the peer's uid instead).
Result<SlurmSettings> settings_from_config();

}  // namespace nodus::backend::slurm
