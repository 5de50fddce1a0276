#pragma once
// How numbers, dates and command lines read in a report. Plain text out: callers escape it.

#include <string>
#include <vector>

namespace nodus::report {

// 8400 -> "8,400", 312.4 -> "312", 42.57 -> "42.6", 3.456 -> "3.46", 0.01234 -> "0.0123".
std::string format_number(double value);

// A value on an axis whose ticks are `step` apart: just enough decimals to tell ticks apart,
// thousands separated. format_tick(2500, 500) -> "2,500", format_tick(0.25, 0.05) -> "0.25".
std::string format_tick(double value, double step);

// Seconds as core's format_duration shows them: "850ms", "3.2s", "4m05s", "1h02m".
std::string format_seconds(double seconds);

// Unix seconds as "2026-11-06 14:03 UTC"; "" for 0 (unknown).
std::string format_date_utc(double unix_seconds);

// argv as a POSIX shell would need it typed: words with special characters in single quotes.
std::string shell_join(const std::vector<std::string>& argv);

// "1 × H200"; "CPU only" without a GPU type or count.
std::string gpu_text(const std::string& gpu_type, int gpu_count);

// What a throughput unit counts: "samples/s" -> "samples", "tokens/s" -> "tokens"; "samples"
// for a unit that is not "<items>/s".
std::string work_items(const std::string& throughput_unit);

}  // namespace nodus::report
