// A developer tool (not installed, not built by default): reads a torch.profiler Chrome trace
// with nodus's streaming reader and prints the measured facts as JSON, then the reader's peak
// memory (ru_maxrss) and time on stderr. bench/trace_reader.sh uses it on a 100 MB trace.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "telemetry/trace_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: nodus_read_trace TRACE.json\n");
    return 125;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto f = nodus::telemetry::read_trace_file(argv[1]);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!f) {
    std::fprintf(stderr, "nodus_read_trace: %s\n", f.error().message.c_str());
    return 1;
  }
  nlohmann::json j = f->to_json();
  j.erase("timeline");
  std::printf("%s\n", j.dump(1).c_str());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::fprintf(stderr, "read in %.2f s, peak RSS %ld KiB, %llu events, %llu kept\n", s,
               ru.ru_maxrss, static_cast<unsigned long long>(f->events),
               static_cast<unsigned long long>(f->kept));
  return 0;
}
