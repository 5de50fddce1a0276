#include "core/curl_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace nodus::curl {
namespace {

template <typename Fn>
void resolve(void* lib, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
}

}  // namespace

Result<const Api*> load() {
  static Api api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      error = std::string("cannot load libcurl.so.4: ") + (why ? why : "unknown");
      return;
    }
    std::string missing;
    resolve(lib, "curl_global_init", api.global_init, missing);
    resolve(lib, "curl_easy_init", api.easy_init, missing);
    resolve(lib, "curl_easy_setopt", api.easy_setopt, missing);
    resolve(lib, "curl_easy_perform", api.easy_perform, missing);
    resolve(lib, "curl_easy_getinfo", api.easy_getinfo, missing);
    resolve(lib, "curl_easy_cleanup", api.easy_cleanup, missing);
    resolve(lib, "curl_easy_strerror", api.easy_strerror, missing);
    resolve(lib, "curl_slist_append", api.slist_append, missing);
    resolve(lib, "curl_slist_free_all", api.slist_free_all, missing);
    resolve(lib, "curl_url", api.url, missing);
    resolve(lib, "curl_url_set", api.url_set, missing);
    resolve(lib, "curl_url_get", api.url_get, missing);
    resolve(lib, "curl_url_cleanup", api.url_cleanup, missing);
    resolve(lib, "curl_free", api.free, missing);
    if (!missing.empty()) error = "libcurl.so.4 lacks " + missing;
  });
  if (!error.empty()) return Error::permanent(error);
  return &api;
}

}  // namespace nodus::curl
