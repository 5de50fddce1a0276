#include "sweep/cell_key.h"

#include <nlohmann/json.hpp>

#include "core/job.h"
#include "sweep/sha256.h"

namespace nodus::sweep {
namespace {

constexpr int kSchemeVersion = 1;

// A string as JSON, or {"hex": ...} when it is not valid UTF-8 (dump() would throw on it, and
// replacing bad bytes would let two different arguments share a key).
nlohmann::json text(const std::string& s) {
  nlohmann::json j = s;
  try {
    (void)j.dump();
    return j;
  } catch (const nlohmann::json::type_error&) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : s) {
      hex += kHex[c >> 4];
      hex += kHex[c & 15];
    }
    return {{"hex", hex}};
  }
}

nlohmann::json text_array(const std::vector<std::string>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : items) out.push_back(text(s));
  return out;
}

std::string canonical(const nlohmann::json& j) {
  // Keys of nlohmann::json objects are kept sorted (std::map), so a compact dump is canonical.
  // Our own strings went through text(); only caller-given options can still hold invalid UTF-8,
  // and those bytes are replaced rather than thrown about.
  return j.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string cell_key_text(const CellKeyInput& input) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [name, value] : input.env)
    env.push_back({text(name), is_secret_name(name) ? text(std::string(kRedacted)) : text(value)});
  nlohmann::json j = {
      {"v", kSchemeVersion},
      {"argv", text_array(redact_argv(input.argv))},
      {"env", env},
      {"gpu", {{"type", text(input.gpu.type)}, {"count", input.gpu.count}}},
      {"max_cost", input.max_cost ? nlohmann::json(*input.max_cost) : nlohmann::json()},
      {"timeout_ms", input.timeout_ms ? nlohmann::json(*input.timeout_ms) : nlohmann::json()},
  };
  return canonical(j);
}

std::string cell_key(const CellKeyInput& input) { return sha256_hex(cell_key_text(input)); }

std::string definition_text(const std::vector<std::string>& argv_template, const Grid& grid,
                            const nlohmann::json& options) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& axis : grid.axes)
    axes.push_back({{"name", axis.name}, {"values", text_array(axis.values)}});
  nlohmann::json j = {
      {"v", kSchemeVersion},
      {"argv", text_array(redact_argv(argv_template))},
      {"grid", axes},
      {"options", options},
  };
  return canonical(j);
}

std::string definition_hash(const std::vector<std::string>& argv_template, const Grid& grid,
                            const nlohmann::json& options) {
  return sha256_hex(definition_text(argv_template, grid, options));
}

}  // namespace nodus::sweep
