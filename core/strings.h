#pragma once
// Small string helpers every folder may use (ccache's util/ model): one definition each, so a
// parser in one folder does not trim differently from its twin in another.

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace nodus {

// `s` without leading and trailing whitespace (isspace: space, \t, \r, \n, \v, \f).
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The parts with `sep` between them ("" for none).
inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace nodus
