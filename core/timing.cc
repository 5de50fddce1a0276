#include "core/timing.h"

#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace nodus::timing {
namespace {

double now_ms(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

void step(const char* name) {
  static const bool enabled = [] {
    const char* v = std::getenv("NODUS_TIMING");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  if (!enabled) return;
  static const double first = now_ms(CLOCK_MONOTONIC);
  static double last = first;
  static double last_cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID);
  const double t = now_ms(CLOCK_MONOTONIC);
  const double cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID);
  std::fprintf(stderr, "nodus: timing: %.2f ms (+%.2f, cpu +%.2f) %s\n", t - first, t - last,
               cpu - last_cpu, name);
  last = t;
  last_cpu = cpu;
}

}  // namespace nodus::timing
