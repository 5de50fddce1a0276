#include "engine/cell_order.h"

#include <algorithm>

namespace nodus::engine {

std::vector<size_t> order_cells(const std::vector<CellEstimate>& cells) {
  std::vector<size_t> unknown, known_pos;
  for (size_t k = 0; k < cells.size(); ++k) (cells[k].seconds ? known_pos : unknown).push_back(k);
  std::stable_sort(known_pos.begin(), known_pos.end(),
                   [&](size_t a, size_t b) { return *cells[a].seconds > *cells[b].seconds; });
  std::vector<size_t> out;
  for (size_t k : unknown) out.push_back(cells[k].cell);
  for (size_t k : known_pos) out.push_back(cells[k].cell);
  return out;
}

std::optional<double> measured_duration(const JobRecord& attempt) {
  if (!attempt.started_at || !attempt.ended_at) return std::nullopt;
  switch (attempt.state) {
    case JobState::kCompleted:
    case JobState::kFailed:
    case JobState::kTimeout:
      break;
    default:
      return std::nullopt;
  }
  const double d = *attempt.ended_at - *attempt.started_at;
  if (!(d >= 0)) return std::nullopt;  // a clock step backwards; NaN
  return d;
}

std::map<std::vector<std::string>, double> known_durations(
    store::Store& store, const std::vector<std::string>& argv_template, const std::string& backend,
    std::optional<int64_t> sweep_id, int look_back) {
  std::map<std::vector<std::string>, double> out;
  auto take = [&](int64_t id) {
    for (const JobRecord& cell : store.sweep_cells(id))
      if (auto d = measured_duration(cell)) out.emplace(cell.argv, *d);  // keeps the first seen
  };
  if (sweep_id) take(*sweep_id);
  for (const store::SweepRecord& s : store.sweeps(look_back))  // newest first
    if ((!sweep_id || s.id != *sweep_id) && s.argv == argv_template && s.backend == backend)
      take(s.id);
  return out;
}

}  // namespace nodus::engine
