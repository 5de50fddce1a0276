#pragma once
// The CSV that `nvidia-smi --query-gpu=<kSmiQueryFields> --format=csv,noheader,nounits -lms N`
// streams: one line per GPU per interval, e.g.
//   2026/11/29 15:17:35.651, 0, 27, 7, 883, 192.65, 1965, 5
// Pure functions, so recorded lines pin the format in tests.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/samples.h"

namespace nodus::telemetry {

// The fields asked for, in the order parse_smi_line reads them. pcie.link.gen.current comes last
// and GpuSample has no field for it yet: the parser accepts lines with or without it.
inline constexpr std::string_view kSmiQueryFields =
    "timestamp,index,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,"
    "pcie.link.gen.current";

// The arguments after the executable for a stream sampled every interval_ms.
std::vector<std::string> smi_arguments(int interval_ms);

// "2026/11/29 15:17:35.651", which nvidia-smi prints in local time, as unix seconds.
std::optional<double> parse_smi_timestamp(std::string_view text);

// "27", " 192.65 " -> the number; "[N/A]", "[Not Supported]", "" or any other text -> empty.
std::optional<double> parse_smi_number(std::string_view field);

// One line -> one sample. Unreadable optional fields ("[N/A]", "[Not Supported]") stay empty.
// nullopt when the line is not a sample: fewer than 7 fields, a bad timestamp or index, or an
// unreadable utilization.gpu (a sample without utilization says nothing about idling; nvidia-smi
// also prints its error messages on stdout, and they must not become samples).
std::optional<GpuSample> parse_smi_line(std::string_view line);

}  // namespace nodus::telemetry
