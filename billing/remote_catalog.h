#pragma once
// A price catalog served over HTTP(S): fetched with an http::Client, kept in a cache folder, and
// read back from there when a later fetch fails, so a flaky network never stops a run that has
// fetched the catalog once.

#include <ostream>
#include <string>

#include "billing/catalog.h"
#include "core/http.h"

namespace nodus::billing {

// Fetches `url` with `client`. A good catalog (HTTP 200 that parses) is saved in cache_dir and
// returned. On a transport error, another status or a bad catalog, the cached copy is used and a
// one-line warning saying why goes to `warn`; with no cached copy the result is an error that
// names the failure. URLs appear only in redacted form.
Result<Catalog> fetch_catalog(const std::string& url, const std::string& cache_dir,
                              http::Client& client, std::ostream& warn);

// The cached copy for `url` after a fetch that failed for `why`: the catalog and a warning on
// `warn`, or an error naming `why` when there is none.
Result<Catalog> cached_catalog(const std::string& url, const std::string& cache_dir,
                               const std::string& why, std::ostream& warn);

// Where the copy of `url` lives: cache_dir/prices-<hash of the URL>.json (the URL itself may
// hold credentials, so it is not spelled out in the name).
std::string catalog_cache_path(const std::string& url, const std::string& cache_dir);

}  // namespace nodus::billing
