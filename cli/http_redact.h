#pragma once
// Secret settings as they may be shown: URLs without credentials, tokens as "<redacted>".

#include <string>

#include "core/http.h"
#include "core/job.h"

namespace nodus::cli {

inline std::string redact_setting(const std::string& key, const std::string& value) {
  if (key.find("url") != std::string::npos) return http::redact_url(value);
  return std::string(kRedacted);
}

}  // namespace nodus::cli
