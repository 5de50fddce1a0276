#include "sweep/metric_flood.h"

namespace nodus::sweep {

void MetricCoalescer::add(const MetricPoint& p) {
  ++stats_.seen;
  if (!names_.count(p.name)) {
    if (names_.size() >= limits_.names) {
      ++stats_.dropped_names;
      return;
    }
    names_.insert(p.name);
  }
  Slot& slot = slots_[p.name];
  if (slot.count < limits_.per_name) {
    slot.last = tick_.size();
    tick_.push_back(p);
  } else {
    MetricPoint& newest = tick_[slot.last];
    newest.t = p.t;
    newest.value = p.value;
    ++stats_.coalesced;
  }
  ++slot.count;
}

std::vector<MetricPoint> MetricCoalescer::take() {
  std::vector<MetricPoint> out;
  out.swap(tick_);
  slots_.clear();
  uint64_t room = limits_.max_stored - stats_.kept;
  if (out.size() > room) {
    stats_.dropped_store += out.size() - room;
    out.resize(room);
  }
  stats_.kept += out.size();
  return out;
}

std::string describe(const CoalesceStats& s) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (s.coalesced)
    add(std::to_string(s.coalesced) +
        " points coalesced (the newest value per metric per tick kept)");
  if (s.dropped_names)
    add(std::to_string(s.dropped_names) + " points of too many metric names dropped");
  if (s.dropped_store)
    add(std::to_string(s.dropped_store) + " points dropped past the per-job storage limit");
  return out;
}

}  // namespace nodus::sweep
