#include "core/timing.h"

#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace nodus::timing {
namespace {

double now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

void step(const char* name) {
  static const bool enabled = [] {
    const char* v = std::getenv("NODUS_TIMING");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  if (!enabled) return;
  static const double first = now_ms();
  static double last = first;
  const double t = now_ms();
  std::fprintf(stderr, "nodus: timing: %.2f ms (+%.2f) %s\n", t - first, t - last, name);
  last = t;
}

}  // namespace nodus::timing
