#pragma once
// Stable identifiers for `nodus sweep --resume`.
//
// The cell key names what one cell runs: the SHA-256 (hex) of a canonical JSON serialization of
// its resolved argv, its environment, its GPU request and its caps. Canonical means: object keys
// sorted, no whitespace, numbers in nlohmann::json's shortest round-trip form, strings as UTF-8
// ({"hex": "..."} for a string that is not valid UTF-8), and a "v" field for the scheme version.
// Values of secret-looking variables (is_secret_name) enter the key as "<redacted>", so rotating
// a token neither changes keys nor lets a key be checked against a guessed token. The argv enters
// as redact_argv makes it, for the same reasons: a URL's password or a --token=... value is not
// part of what the cell is (the store keeps only the redacted argv, so a key over the real one
// could not be recomputed from it either).
//
// The definition hash names the whole sweep (argv template, grid, options), so --resume can
// refuse to continue a sweep whose definition changed.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/parse.h"
#include "sweep/grid.h"

namespace nodus::sweep {

struct CellKeyInput {
  std::vector<std::string> argv;           // resolved: placeholders replaced
  std::map<std::string, std::string> env;  // the user's --env plus cell_env(cell)
  GpuRequest gpu;                          // type as typed, count 0 for none
  std::optional<double> max_cost;          // USD
  std::optional<int64_t> timeout_ms;
};

// The canonical JSON text the key hashes (shown by diagnostics, compared in tests).
std::string cell_key_text(const CellKeyInput& input);
// 64 lowercase hex characters.
std::string cell_key(const CellKeyInput& input);

// options: every other setting that changes what the cells run or how they are judged (GPU
// request, caps, --env with secret values already redacted, throughput name, metric regexes, ...).
// The caller decides which settings belong; keys are sorted, so their order does not matter.
std::string definition_text(const std::vector<std::string>& argv_template, const Grid& grid,
                            const nlohmann::json& options);
std::string definition_hash(const std::vector<std::string>& argv_template, const Grid& grid,
                            const nlohmann::json& options);

}  // namespace nodus::sweep
