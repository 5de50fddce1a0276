#pragma once
// libcurl's entry points, resolved from libcurl.so.4 with dlopen on first use: nothing links
// against libcurl (core/http.h says why). Internal to core/: core/http.cc (the HTTP client) and
// core/secret.cc (URLs in text parsed by curl's URL API) share the one loader. Only the types and
// constants come from <curl/curl.h>.

#include <curl/curl.h>

#include "core/result.h"

namespace nodus::curl {

struct Api {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL* handle);
  CURLcode (*easy_getinfo)(CURL* handle, CURLINFO info, ...);
  void (*easy_cleanup)(CURL* handle);
  const char* (*easy_strerror)(CURLcode code);
  curl_slist* (*slist_append)(curl_slist* list, const char* text);
  void (*slist_free_all)(curl_slist* list);
  // The URL API (libcurl 7.62 and later).
  CURLU* (*url)();
  CURLUcode (*url_set)(CURLU* handle, CURLUPart part, const char* content, unsigned int flags);
  CURLUcode (*url_get)(CURLU* handle, CURLUPart part, char** content, unsigned int flags);
  void (*url_cleanup)(CURLU* handle);
  void (*free)(void* p);
};

// Loads libcurl.so.4 and resolves every entry point, once per process; later calls return the
// same table or the same error. It does not call curl_global_init (the URL API needs none, and
// its cost is not one a redacted argument should pay): core/http.cc does before its first
// transfer.
Result<const Api*> load();

}  // namespace nodus::curl
