#pragma once
// Parsers for the values users type on the command line. Each returns an Error whose message
// names the offending value and what is allowed, ready to print as a one-line error.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.h"

namespace nodus {

using Millis = std::chrono::milliseconds;

// "90s", "30m", "2h", "1h30m", "1d", "250ms", "1.5h", a bare number means seconds. Must be > 0.
Result<Millis> parse_duration(std::string_view text, std::string_view flag = "--timeout");

// "5", "5.00", "$5", "0.25". Must be finite and > 0.
Result<double> parse_usd(std::string_view text, std::string_view flag = "--max-cost");

// "H100", "h100:8", "none". Type is returned as typed (the catalog resolves aliases);
// count defaults to 1; "none" gives an empty type and count 0.
struct GpuRequest {
  std::string type;
  int count = 0;
  bool none() const { return count == 0; }
};
Result<GpuRequest> parse_gpu_request(std::string_view text);

// "K=V" (V may be empty, K must be a valid environment name).
Result<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text);

// "60", "60%", "12.5": a percentage in [0, 100].
Result<double> parse_percent(std::string_view text, std::string_view flag);

// A size in bytes: "1G", "512M", "2GiB", "64k", "1048576"; suffixes K, M, G, T are powers of
// 1024 (with or without "iB"/"B", any case). "none" gives 0 (no limit). At least `min_bytes`.
Result<uint64_t> parse_size(std::string_view text, std::string_view flag, uint64_t min_bytes = 1);
// "1.0 GiB", "512.0 MiB", "3.4 KiB", "17 B".
std::string format_size(uint64_t bytes);

// Human forms used in tables: "1h02m", "3.2s", "850ms".
std::string format_duration(Millis d);
// "$0.0123" below a cent, "$12.35" otherwise.
std::string format_usd(double usd);
// A percentage of 0..100 for people, the one rule of every table, finding and report: one
// decimal, none when it is 0 (83.2 -> "83.2%", 4.25 -> "4.2%", 5 -> "5%"), "n/a" when not a
// number. One decimal everywhere: a finding's "10.3% > 10%" must not read "10% > 10%".
std::string format_percent(double percent);
// A throughput as show, the sweep table and the ranks' line print it: 8400, 43.6, 4.37.
std::string format_throughput(double per_second);

std::string to_lower(std::string_view s);
std::string to_upper(std::string_view s);

}  // namespace nodus
