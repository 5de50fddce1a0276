#include "billing/remote_catalog.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "billing/catalog.h"
#include "core/files.h"

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

// Writes through a new temporary file (never through a planted symlink) and a rename, so a
// reader never sees half a catalog; the cache folder is private like every nodus folder.
void save(const std::string& path, const std::string& body, std::ostream& warn) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(folder).parent_path(), ec);
  auto private_folder = ensure_private_folder(folder);
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  if (private_folder.ok()) {
    if (auto fd = create_new_file(tmp, 0600); fd.ok()) {
      size_t done = 0;
      while (done < body.size()) {
        ssize_t n = ::write(*fd, body.data() + done, body.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      bool ok = ::close(*fd) == 0 && done == body.size();
      if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return;
      ::unlink(tmp.c_str());
    }
  }
  warn << "nodus: warning: cannot cache the price catalog in " << path << "\n";
}

}  // namespace

std::string catalog_cache_path(const std::string& url, const std::string& cache_dir) {
  return (std::filesystem::path(cache_dir) / ("prices-" + fnv1a_hex(url) + ".json")).string();
}

Result<Catalog> cached_catalog(const std::string& url, const std::string& cache_dir,
                               const std::string& why, std::ostream& warn) {
  std::string path = catalog_cache_path(url, cache_dir);
  if (::access(path.c_str(), F_OK) != 0)
    return Error::permanent("cannot load the price catalog: " + why + "; and no cached copy of " +
                            http::redact_url(url) + " in " + cache_dir);
  auto text = read_input_file(path, "cached price catalog", kMaxCatalogBytes);
  if (!text.ok())
    return Error::permanent("cannot load the price catalog: " + why + "; and " +
                            text.error().message);
  auto catalog = Catalog::parse(*text, path);
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
