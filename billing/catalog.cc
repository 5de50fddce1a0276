// Lookups on a Catalog, where a catalog comes from (--prices, NODUS_PRICES, built-in), and the
// two formulas everything else bills with.

#include "billing/catalog.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <limits>

#include "billing/remote_catalog.h"
#include "core/config.h"
#include "core/files.h"
#include "core/http.h"
#include "core/parse.h"
#include "core/text.h"

namespace nodus::billing {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Plain http:// would let anyone on the path rewrite prices; it is accepted only where nothing
// is on the path, which is what tests need.
bool is_loopback_http(std::string_view url) {
  std::string_view rest = url.substr(std::string_view("http://").size());
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  std::string_view host = rest;
  if (starts_with(rest, "[")) {
    host = rest.substr(0, rest.find(']') + 1);
  } else if (auto colon = rest.find(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
  }
  std::string lower = to_lower(host);
  return lower == "localhost" || lower == "127.0.0.1" || lower == "[::1]";
}

// read_input_file refuses FIFOs and devices instead of blocking on them or reading forever.
Result<std::string> read_file(const std::string& path) {
  return read_input_file(path, "price catalog", kMaxCatalogBytes);
}

// True when `pattern` occurs in `name` with no letter or digit on either side.
bool contains_word(std::string_view name, std::string_view pattern) {
  for (size_t at = name.find(pattern); at != std::string_view::npos;
       at = name.find(pattern, at + 1)) {
    size_t end = at + pattern.size();
    bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
    bool right = end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]));
    if (left && right) return true;
  }
  return false;
}

// Every name an entry answers to, lower-case.
std::vector<std::string> names_of(const PriceEntry& e) {
  std::vector<std::string> names{to_lower(e.type)};
  for (const auto& a : e.aliases) names.push_back(to_lower(a));
  return names;
}

}  // namespace

std::string PriceEntry::source_url() const {
  return starts_with(source, "https://") || starts_with(source, "http://") ? source : std::string();
}

Catalog Catalog::merge(const Catalog& base, const Catalog& overlay) {
  Catalog out;
  out.origin_ = overlay.origin_ + " over " + base.origin_;
  std::vector<std::string> replaced;
  for (const auto& e : overlay.entries_)
    for (auto& n : names_of(e)) replaced.push_back(std::move(n));
  for (const auto& e : base.entries_) {
    bool gone = false;
    for (const auto& n : names_of(e))
      gone |= std::find(replaced.begin(), replaced.end(), n) != replaced.end();
    if (!gone) out.entries_.push_back(e);
  }
  for (const auto& e : overlay.entries_) out.entries_.push_back(e);
  return out;
}

const PriceEntry* Catalog::find(std::string_view type_or_alias) const {
  std::string wanted = to_lower(type_or_alias);
  for (const auto& e : entries_) {
    if (to_lower(e.type) == wanted) return &e;
    for (const auto& alias : e.aliases)
      if (to_lower(alias) == wanted) return &e;
  }
  return nullptr;
}

Result<const PriceEntry*> Catalog::lookup(std::string_view type_or_alias) const {
  if (const PriceEntry* e = find(type_or_alias)) return e;
  std::vector<std::string> types;
  for (const auto& e : entries_) types.push_back(e.type);
  std::sort(types.begin(), types.end());
  std::string known;
  for (const auto& t : types) known += (known.empty() ? "" : ", ") + t;
  // A typo (H1000, a10, l40) is one or two edits from a type or an alias: name the nearest.
  const std::string wanted = to_lower(type_or_alias);
  const size_t allowed = std::max<size_t>(1, std::min<size_t>(2, wanted.size() / 3));
  std::string guess;
  size_t best = allowed + 1;
  for (const auto& e : entries_) {
    std::vector<std::string> names = {e.type};
    names.insert(names.end(), e.aliases.begin(), e.aliases.end());
    for (const auto& n : names)
      if (size_t d = edit_distance(wanted, to_lower(n)); d < best) {
        best = d;
        guess = n == e.type ? e.type : n + " (" + e.type + ")";
      }
  }
  return Error::permanent("--gpu: unknown GPU type '" + escape_control(type_or_alias) + "'" +
                          (guess.empty() ? "" : "; did you mean " + guess + "?") +
                          "; known types: " + known);
}

const PriceEntry* Catalog::match_device_name(std::string_view device_name) const {
  std::string name = to_lower(device_name);
  const PriceEntry* best = nullptr;
  size_t best_length = 0;
  for (const auto& e : entries_) {
    for (const auto& pattern : e.device_names) {
      if (pattern.size() > best_length && contains_word(name, to_lower(pattern))) {
        best = &e;
        best_length = pattern.size();
      }
    }
  }
  return best;
}

Result<Catalog> Catalog::load(const std::string& path_or_url, const std::string& cache_dir) {
  const std::string& where = path_or_url;
  if (starts_with(where, "https://") || starts_with(where, "http://")) {
    if (starts_with(where, "http://") && !is_loopback_http(where))
      return Error::permanent("price catalog URL '" + http::redact_url(where) +
                              "': plain http:// is allowed only for localhost and 127.0.0.1; "
                              "use https://");
    auto client = http::make_curl_client();
    if (!client.ok()) return cached_catalog(where, cache_dir, client.error().message, std::cerr);
    return fetch_catalog(where, cache_dir, **client, std::cerr);
  }
  if (where.find("://") != std::string::npos)
    return Error::permanent("price catalog '" + http::redact_url(where) +
                            "': expected a file path or an https:// URL");
  auto text = read_file(where);
  if (!text.ok()) return text.error();
  return parse(*text, where);
}

Result<Catalog> Catalog::resolve(const std::optional<std::string>& flag,
                                 const std::string& cache_dir, bool standalone) {
  if (!standalone) {
    if (auto only = config_env("prices_only")) {
      if (*only != "1" && *only != "0")
        return Error::permanent("NODUS_PRICES_ONLY: invalid value '" + *only +
                                "': expected 1 or 0");
      standalone = *only == "1";
    }
  }
  std::optional<Catalog> user;
  if (flag) {
    auto catalog = load(*flag, cache_dir);
    if (!catalog.ok()) return catalog.error();
    user = std::move(*catalog);
  } else if (auto env = config_env("prices")) {
    auto catalog = load(*env, cache_dir);
    if (!catalog.ok()) return Error::permanent(catalog.error().message + " (from NODUS_PRICES)");
    user = std::move(*catalog);
  }
  if (!user) {
    if (standalone)
      return Error::permanent(
          "--prices-only: no catalog to stand alone; give --prices FILE|URL or NODUS_PRICES");
    return builtin();
  }
  if (standalone) return *user;
  return merge(builtin(), *user);
}

double cap_seconds(double max_cost, int gpus, double rate_per_gpu_hour) {
  double per_second = usd_per_second(gpus, rate_per_gpu_hour);
  if (per_second <= 0) return std::numeric_limits<double>::infinity();
  return max_cost / per_second;
}

}  // namespace nodus::billing
