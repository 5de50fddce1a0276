#include "billing/remote_catalog.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nodus::billing {
namespace {

// FNV-1a: a stable hash (std::hash may change between library versions, orphaning the cache).
std::string fnv1a_hex(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// "2026-11-06 14:03 UTC", the time the cached copy was written.
std::string modified_utc(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "unknown time";
  std::tm tm{};
  gmtime_r(&st.st_mtime, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// Writes through a temporary file and a rename, so a reader never sees half a catalog.
void save(const std::string& path, const std::string& body, std::ostream& warn) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << body;
    if (out.flush() && !ec) {
      std::filesystem::rename(tmp, path, ec);
      if (!ec) return;
    }
  }
  std::filesystem::remove(tmp, ec);
  warn << "nodus: warning: cannot cache the price catalog in " << path << "\n";
}

}  // namespace

std::string catalog_cache_path(const std::string& url, const std::string& cache_dir) {
  return (std::filesystem::path(cache_dir) / ("prices-" + fnv1a_hex(url) + ".json")).string();
}

Result<Catalog> cached_catalog(const std::string& url, const std::string& cache_dir,
                               const std::string& why, std::ostream& warn) {
  std::string path = catalog_cache_path(url, cache_dir);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::permanent("cannot load the price catalog: " + why + "; and no cached copy of " +
                            http::redact_url(url) + " in " + cache_dir);
  std::stringstream text;
  text << in.rdbuf();
  auto catalog = Catalog::parse(text.str(), path);
  if (!catalog.ok())
    return Error::permanent("cannot load the price catalog: " + why +
                            "; and the cached copy is unusable: " + catalog.error().message);
  warn << "nodus: warning: " << why << "; using the cached price catalog from "
       << modified_utc(path) << " (" << path << ")\n";
  return catalog;
}

Result<Catalog> fetch_catalog(const std::string& url, const std::string& cache_dir,
                              http::Client& client, std::ostream& warn) {
  const std::string shown = http::redact_url(url);
  http::Request request;
  request.url = url;
  request.timeout_ms = 15'000;
  auto response = client.send(request);
  std::string why;
  if (!response.ok()) {
    why = response.error().message;
  } else if (response->status != 200) {
    why = "GET " + shown + " answered HTTP " + std::to_string(response->status);
  } else {
    auto catalog = Catalog::parse(response->body, shown);
    if (catalog.ok()) {
      save(catalog_cache_path(url, cache_dir), response->body, warn);
      return catalog;
    }
    why = catalog.error().message;
  }
  return cached_catalog(url, cache_dir, why, warn);
}

}  // namespace nodus::billing
