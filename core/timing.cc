#include "core/timing.h"

#include <sys/resource.h>
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

long minor_faults() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
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
  static long last_faults = minor_faults();
  const double t = now_ms(CLOCK_MONOTONIC);
  const double cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID);
  const long faults = minor_faults();
  std::fprintf(stderr, "nodus: timing: %.2f ms (+%.2f, cpu +%.2f, faults +%ld) %s\n", t - first,
               t - last, cpu - last_cpu, faults - last_faults, name);
  last = t;
  last_cpu = cpu;
  last_faults = faults;
}

}  // namespace nodus::timing
