#pragma once
// Catalog is the price list: GPU types, their aliases, $/GPU-hour, where each price comes from
// and when it was checked. The built-in catalog is billing/prices.json compiled into the binary;
// --prices FILE|URL or NODUS_PRICES merges over it (an entry replaces the built-in one it names),
// or stands alone with --prices-only / NODUS_PRICES_ONLY=1.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost.h"
#include "core/result.h"

namespace nodus::billing {

// The largest rate a catalog may hold, USD per GPU-hour (documented in README's catalog section).
inline constexpr double kMaxUsdPerGpuHour = 1000;
// The largest catalog file read: a catalog is a few kilobytes, and the limit keeps /dev/zero or
// a wrong multi-gigabyte file from exhausting memory.
inline constexpr size_t kMaxCatalogBytes = 4 << 20;

// A GPU's dense peak arithmetic (no sparsity), TFLOPS per GPU by the precision the matrix
// multiplies run in, from the vendor's datasheet: what MFU divides by.
struct PeakFlops {
  double bf16 = 0;      // BF16/FP16 tensor cores: the usual MFU convention
  double tf32 = 0;      // 0: not given
  double fp32 = 0;      // without tensor cores
  std::string source;   // the datasheet
  std::string checked;  // YYYY-MM-DD
};

struct PriceEntry {
  std::string type;                  // canonical name, e.g. "H100-SXM"
  std::vector<std::string> aliases;  // e.g. "H100", "H100-80GB"
  double usd_per_gpu_hour = 0;       // 0 to kMaxUsdPerGpuHour
  std::string source;   // URL or document the price comes from; "none" when it has no public one
  std::string checked;  // date checked, YYYY-MM-DD
  std::string via;      // where the source's numbers were read, when not the source itself
  std::string note;     // which product the price is for ("8x instance, per GPU", a tier)
  // Substrings of the driver's device name that identify this type ("H100 80GB HBM3").
  std::vector<std::string> device_names;
  std::optional<PeakFlops> peak;  // "peak_tflops" {bf16, tf32, fp32, source, checked}
  std::string origin;             // the catalog it came from: "built-in", a path or a redacted URL

  // The source when it is an http(s) URL, else "".
  std::string source_url() const;
};

class Catalog {
 public:
  // Parsed once; a reference, so pointers from find() and lookup() on it stay valid.
  static const Catalog& builtin();
  // Parses catalog JSON. Errors say "<origin>:<line>: <what is wrong>".
  static Result<Catalog> parse(std::string_view json_text, const std::string& origin);
  // A file path or an https:// URL (fetched with the HTTP client, cached in cache_dir; when a
  // fetch fails the cached copy is used and a warning goes to stderr). Plain http:// is accepted
  // only for localhost and 127.0.0.1.
  static Result<Catalog> load(const std::string& path_or_url, const std::string& cache_dir);
  // The catalog in force: `flag` (--prices) if given, else NODUS_PRICES, merged over builtin()
  // unless `standalone` (--prices-only) or NODUS_PRICES_ONLY=1; builtin() when neither is set.
  static Result<Catalog> resolve(const std::optional<std::string>& flag,
                                 const std::string& cache_dir, bool standalone = false);
  // `overlay` over `base`: each overlay entry replaces every base entry whose type or alias
  // is its type or one of its aliases (case-insensitive); the rest of base stays, in order,
  // and overlay's new types follow.
  static Catalog merge(const Catalog& base, const Catalog& overlay);

  // Case-insensitive lookup by type or alias.
  const PriceEntry* find(std::string_view type_or_alias) const;
  // As find(), but an unknown type is an error listing the known types.
  Result<const PriceEntry*> lookup(std::string_view type_or_alias) const;
  // Maps a driver device name ("NVIDIA H100 80GB HBM3") to a type; nullptr if none matches.
  // A device_names pattern matches case-insensitively as whole words: "L4" matches "NVIDIA L4"
  // but not "NVIDIA L40S", "H200" not "NVIDIA GH200". The longest matching pattern wins.
  const PriceEntry* match_device_name(std::string_view device_name) const;

  const std::vector<PriceEntry>& entries() const { return entries_; }
  const std::string& origin() const { return origin_; }  // "built-in", a path or a redacted URL

 private:
  std::vector<PriceEntry> entries_;
  std::string origin_;
};

// Cost in USD of `gpus` GPUs at `rate` $/GPU-hour for `seconds` (the formula lives in core/cost.h).
using nodus::cost_usd;
// Seconds after start at which the cost reaches max_cost (infinity when the rate is 0).
double cap_seconds(double max_cost, int gpus, double rate_per_gpu_hour);

}  // namespace nodus::billing
