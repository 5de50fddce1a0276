#pragma once
// MetricCoalescer bounds what a job's metrics cost the supervisor and the store, whatever the job
// prints: per sampling tick it keeps at most `per_name` points of each metric (past that, the
// newest value replaces the last kept one: a flood is coalesced to its latest value), at most
// `names` distinct metric names per job, and at most `max_stored` points per job in all. Every
// point not kept is counted, so `nodus show` can say what was coalesced or dropped.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/samples.h"

namespace nodus::sweep {

struct CoalesceLimits {
  size_t per_name = 16;             // points of one metric kept per tick
  size_t names = 256;               // distinct metric names per job
  uint64_t max_stored = 1'000'000;  // points per job handed on for storage
};

struct CoalesceStats {
  uint64_t seen = 0;           // points offered
  uint64_t kept = 0;           // points handed on by take()
  uint64_t coalesced = 0;      // replaced by a newer value of the same metric in the same tick
  uint64_t dropped_names = 0;  // of a metric past the `names` limit
  uint64_t dropped_store = 0;  // past max_stored
};

class MetricCoalescer {
 public:
  explicit MetricCoalescer(CoalesceLimits limits = {}) : limits_(limits) {}

  void add(const MetricPoint& p);
  // The points kept since the last call, in arrival order; starts the next tick.
  std::vector<MetricPoint> take();

  const CoalesceStats& stats() const { return stats_; }

 private:
  struct Slot {
    size_t count = 0;  // points of this name this tick
    size_t last = 0;   // index in tick_ of the newest kept one
  };
  CoalesceLimits limits_;
  CoalesceStats stats_;
  std::vector<MetricPoint> tick_;
  std::unordered_map<std::string, Slot> slots_;  // this tick's names
  std::unordered_set<std::string> names_;        // every name accepted so far
};

// "1200 points coalesced (newest kept per tick); 3 dropped: over 256 names", or "".
std::string describe(const CoalesceStats& stats);

}  // namespace nodus::sweep
