#pragma once
// The symptom -> likely cause -> first fix table applied to a job's Summary. Findings come most
// likely first, each with the numbers that triggered it, so a user can check the reasoning.
//
//   rule            verdict           when
//   loader-starved  loader-starved    data wait > 10%, or a sawtooth with low util and no
//                                     data wait reported (or 5-10%); CPU neither saturated nor idle
//   cpu-bound       cpu-bound         data wait > 10% and the job's cores >= 85% busy
//   io-bound        io-bound          data wait > 10%, cores < 40% busy, no process near a core
//   launch-bound    launch-bound      steady util 30-50% (sd <= 15, no sawtooth), data wait < 10%
//   sync-bound      gpu-idle-in-step  util < 60% otherwise, data wait < 10%
//   busy            ok                util >= 80%: a note only (bf16 autocast if steps are slow)

#include <string>
#include <vector>

#include "telemetry/summary.h"

namespace nodus::telemetry {

inline constexpr double kDataWaitHigh = 0.10;      // fix the loader before the model
inline constexpr double kDataWaitNearZero = 0.05;  // the loader is not what the GPU waits on
inline constexpr double kLowUtil = 60;
inline constexpr double kBusyUtil = 80;
inline constexpr double kLaunchUtilLow = 30;
inline constexpr double kLaunchUtilHigh = 50;
inline constexpr double kSteadyStddev = 15;    // percentage points
inline constexpr double kSawtoothHigh = 0.25;  // a quarter of the steps jump idle <-> busy
inline constexpr double kCpuSaturated = 0.85;  // of the job's cores
inline constexpr double kCpuIdle = 0.40;
inline constexpr double kProcessBusy = 80;  // percent of one core: a process computing flat out

struct Finding {
  std::string rule;     // loader-starved, cpu-bound, io-bound, sync-bound, launch-bound, busy
  std::string verdict;  // the short word for tables
  std::string cause;
  std::string fix;       // the first thing to try
  std::string evidence;  // the numbers that triggered the rule
  bool note = false;     // informational: nothing is wrong
  double score = 0;      // 0..1, how strongly the evidence points here; findings sort by it
};

// Findings, most likely first; empty when nothing applies (or nothing is known).
std::vector<Finding> diagnose(const Summary& s);

// One word for tables: the top finding's verdict, else "ok" with GPU data, else "no-gpu-data".
std::string verdict(const Summary& s);

// "data wait 72% > 10%, GPU util 31%: loader starved -> raise num_workers (try 4, 8, 16), ..."
std::string format_finding(const Finding& f);

}  // namespace nodus::telemetry
