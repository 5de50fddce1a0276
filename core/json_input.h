#pragma once
// JSON that nodus did not write (price catalogs, slurmrestd answers, a job's metrics lines and
// state files) is read through here, with a bound on nesting: a 200 KB file of "[[[[..." would
// otherwise build a 100,000-level tree that takes gigabytes and the stack to handle.

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace nodus {

// Deeper than any document nodus reads needs (a catalog is 3 levels, a Slurm answer under 10).
constexpr size_t kJsonMaxDepth = 64;

// The offset of the first '[' or '{' that opens level max_depth + 1, outside strings; nullopt
// when the text stays within max_depth. A scan of the bytes: nothing is built, and text that is
// not JSON is left for the parser to refuse.
std::optional<size_t> json_too_deep_at(std::string_view text, size_t max_depth = kJsonMaxDepth);

// "nested deeper than 64 levels (the limit)": the words every refusal uses (YAML too).
std::string json_depth_words(size_t max_depth = kJsonMaxDepth);

// `text` parsed without exceptions: discarded (is_discarded()) when it is not JSON or nests
// deeper than kJsonMaxDepth.
template <class Json = nlohmann::json>
Json parse_untrusted_json(std::string_view text) {
  if (json_too_deep_at(text)) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace nodus
