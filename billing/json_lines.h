#pragma once
// Line numbers for catalog error messages. nlohmann::json keeps no source positions, so this walks
// the text once (after nlohmann has accepted it) and records the line where every value starts,
// keyed by JSON pointer ("/gpus/3/usd_per_gpu_hour"); an object member is recorded at the line of
// its key.

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nodus::billing {

class JsonLines {
 public:
  // `text` must be valid JSON.
  explicit JsonLines(std::string_view text);
  // The line of the value at `pointer`, else of its nearest recorded ancestor, else 1.
  int line_of(std::string pointer) const;

 private:
  std::unordered_map<std::string, int> lines_;
};

// The 1-based line that holds byte `offset` (0-based) of `text`; offsets past the end give the
// last line.
int line_at(std::string_view text, size_t offset);

// Escapes a member name for use in a JSON pointer (RFC 6901: "~" -> "~0", "/" -> "~1").
std::string pointer_token(std::string_view name);

}  // namespace nodus::billing
