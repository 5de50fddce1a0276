#include "engine/cell_order.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

namespace nodus::engine {

namespace {

// Below this many cells in two lanes, plan_lanes tries every split of them (2^13 sums).
constexpr size_t kEverySplit = 14;
// Enough rounds for any sweep seen; each round strictly shortens a lane, so this only bounds
// the time a pathological input could take.
constexpr int kMaxRounds = 500;
constexpr double kEpsilon = 1e-9;

double total(const std::vector<size_t>& lane, const std::vector<double>& s) {
  double t = 0;
  for (size_t i : lane) t += s[i];
  return t;
}

// The split of `items` into two lanes whose longer side is shortest, over every split (the
// last item stays on the second side, so each split is counted once).
std::pair<std::vector<size_t>, std::vector<size_t>> best_split(const std::vector<size_t>& items,
                                                               const std::vector<double>& s) {
  const size_t n = items.size();
  const size_t count = size_t{1} << (n - 1);
  const double all = total(items, s);
  std::vector<double> sum(count, 0.0);
  double best = all;
  size_t best_mask = 0;
  for (size_t mask = 1; mask < count; ++mask) {
    sum[mask] = sum[mask & (mask - 1)] + s[items[std::countr_zero(mask)]];
    const double longer = std::max(sum[mask], all - sum[mask]);
    if (longer < best - kEpsilon) {
      best = longer;
      best_mask = mask;
    }
  }
  std::pair<std::vector<size_t>, std::vector<size_t>> out;
  for (size_t k = 0; k < n; ++k)
    (k + 1 < n && ((best_mask >> k) & 1) ? out.first : out.second).push_back(items[k]);
  return out;
}

// The single move of a cell from `hi` to `lo`, or swap between them, that evens them most;
// false when none shortens `hi`.
bool move_or_swap(std::vector<size_t>& hi, std::vector<size_t>& lo, const std::vector<double>& s) {
  const double gap = total(hi, s) - total(lo, s);
  double best = gap;  // |gap - 2 delta|: how uneven the two are after; must beat doing nothing
  std::optional<std::pair<size_t, std::optional<size_t>>> pick;  // (in hi, in lo)
  auto consider = [&](double delta, size_t a, std::optional<size_t> b) {
    if (delta > kEpsilon && delta < gap - kEpsilon && std::abs(gap - 2 * delta) < best) {
      best = std::abs(gap - 2 * delta);
      pick = {a, b};
    }
  };
  for (size_t a = 0; a < hi.size(); ++a) {
    consider(s[hi[a]], a, std::nullopt);
    for (size_t b = 0; b < lo.size(); ++b) consider(s[hi[a]] - s[lo[b]], a, b);
  }
  if (!pick) return false;
  const size_t moved = hi[pick->first];
  if (pick->second) {
    hi[pick->first] = lo[*pick->second];
    lo[*pick->second] = moved;
  } else {
    hi.erase(hi.begin() + static_cast<std::ptrdiff_t>(pick->first));
    lo.push_back(moved);
  }
  return true;
}

// Evens lanes `hi` and `lo` (hi the longer); false when nothing shortens `hi`.
bool even_out(std::vector<size_t>& hi, std::vector<size_t>& lo, const std::vector<double>& s) {
  if (hi.size() + lo.size() > kEverySplit) return move_or_swap(hi, lo, s);
  std::vector<size_t> items = hi;
  items.insert(items.end(), lo.begin(), lo.end());
  auto [a, b] = best_split(items, s);
  if (std::max(total(a, s), total(b, s)) >= total(hi, s) - kEpsilon) return false;
  hi = std::move(a);
  lo = std::move(b);
  return true;
}

std::vector<size_t> longest_first(const std::vector<double>& s) {
  std::vector<size_t> order(s.size());
  for (size_t i = 0; i < s.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
  return order;
}

}  // namespace

std::vector<std::vector<size_t>> plan_lanes(const std::vector<double>& seconds, int lanes) {
  const size_t m = static_cast<size_t>(std::max(1, lanes));
  std::vector<std::vector<size_t>> plan(m);
  std::vector<double> load(m, 0.0);
  for (size_t i : longest_first(seconds)) {
    const size_t k = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    plan[k].push_back(i);
    load[k] += seconds[i];
  }
  for (int round = 0; round < kMaxRounds && m > 1; ++round) {
    std::vector<size_t> by_load(m);
    for (size_t k = 0; k < m; ++k) by_load[k] = k;
    std::stable_sort(by_load.begin(), by_load.end(),
                     [&](size_t a, size_t b) { return load[a] > load[b]; });
    bool improved = false;
    for (size_t x = 0; x < m && !improved; ++x) {
      for (size_t y = m; y-- > x + 1 && !improved;) {
        const size_t hi = by_load[x], lo = by_load[y];
        if (load[lo] >= load[hi] - kEpsilon) continue;
        if (even_out(plan[hi], plan[lo], seconds)) {
          load[hi] = total(plan[hi], seconds);
          load[lo] = total(plan[lo], seconds);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  for (auto& lane : plan)
    std::stable_sort(lane.begin(), lane.end(),
                     [&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  return plan;
}

double shared_makespan(const std::vector<size_t>& order, const std::vector<double>& seconds,
                       const std::vector<int>& widths, int gpus, int lanes) {
  gpus = std::max(1, gpus);
  lanes = std::max(1, lanes);
  std::vector<size_t> waiting = order;
  std::vector<std::pair<double, int>> running;  // (end, width)
  double now = 0, last = 0;
  while (!waiting.empty()) {
    int free = gpus;
    for (const auto& r : running) free -= r.second;
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (static_cast<int>(running.size()) >= lanes) break;
      const int w = std::clamp(widths[*it], 1, gpus);
      if (w > free) {
        ++it;
        continue;
      }
      running.emplace_back(now + seconds[*it], w);
      last = std::max(last, now + seconds[*it]);
      free -= w;
      it = waiting.erase(it);
    }
    if (waiting.empty()) break;
    double next = running.front().first;  // never empty here: an idle machine fits any cell
    for (const auto& r : running) next = std::min(next, r.first);
    now = next;
    std::erase_if(running, [&](const auto& r) { return r.first <= now + kEpsilon; });
  }
  return last;
}

std::vector<size_t> plan_shared(const std::vector<double>& seconds, const std::vector<int>& widths,
                                int gpus, int lanes) {
  const size_t n = seconds.size();
  auto sorted_by = [&](auto before) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), before);
    return order;
  };
  std::vector<size_t> best = sorted_by([&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  double best_span = shared_makespan(best, seconds, widths, gpus, lanes);
  for (auto& candidate : {sorted_by([&](size_t a, size_t b) {
                            return seconds[a] * widths[a] > seconds[b] * widths[b];
                          }),
                          sorted_by([&](size_t a, size_t b) {
                            return widths[a] != widths[b] ? widths[a] > widths[b]
                                                          : seconds[a] > seconds[b];
                          })}) {
    const double span = shared_makespan(candidate, seconds, widths, gpus, lanes);
    if (span < best_span - kEpsilon) {
      best_span = span;
      best = candidate;
    }
  }
  // Swaps: each evaluation is O(n^2) at worst; 64 cells and 20,000 evaluations stay well under
  // a second, once per sweep.
  constexpr size_t kMostCells = 64;
  constexpr int kMostEvaluations = 20000;
  if (n > kMostCells) return best;
  int evaluations = 0;
  for (bool improved = true; improved && evaluations < kMostEvaluations;) {
    improved = false;
    for (size_t i = 0; i < n && evaluations < kMostEvaluations; ++i) {
      for (size_t j = i + 1; j < n && evaluations < kMostEvaluations; ++j) {
        if (seconds[best[i]] == seconds[best[j]] && widths[best[i]] == widths[best[j]]) continue;
        std::swap(best[i], best[j]);
        const double span = shared_makespan(best, seconds, widths, gpus, lanes);
        ++evaluations;
        if (span < best_span - kEpsilon) {
          best_span = span;
          improved = true;
        } else {
          std::swap(best[i], best[j]);
        }
      }
    }
  }
  return best;
}

std::vector<size_t> order_cells(const std::vector<CellEstimate>& cells, int lanes, int gpus) {
  std::vector<size_t> unknown, known_pos;
  for (size_t k = 0; k < cells.size(); ++k) (cells[k].seconds ? known_pos : unknown).push_back(k);
  std::vector<size_t> out;
  const bool mixed = std::any_of(cells.begin(), cells.end(), [&](const CellEstimate& c) {
    return c.gpus != cells.front().gpus;
  });
  if (unknown.empty() && mixed && gpus > 0) {
    std::vector<double> seconds;
    std::vector<int> widths;
    for (const CellEstimate& c : cells) {
      seconds.push_back(*c.seconds);
      widths.push_back(c.gpus);
    }
    for (size_t k : plan_shared(seconds, widths, gpus, lanes)) out.push_back(cells[k].cell);
    return out;
  }
  if (unknown.empty() && lanes > 1 && cells.size() > static_cast<size_t>(lanes)) {
    std::vector<double> seconds;
    for (const CellEstimate& c : cells) seconds.push_back(*c.seconds);
    // Each cell at its planned start; ties (the first cell of every lane) by lane.
    struct Start {
      double at;
      size_t lane, pos;
    };
    std::vector<Start> starts;
    const auto plan = plan_lanes(seconds, lanes);
    for (size_t k = 0; k < plan.size(); ++k) {
      double at = 0;
      for (size_t i : plan[k]) {
        starts.push_back({at, k, i});
        at += seconds[i];
      }
    }
    std::stable_sort(starts.begin(), starts.end(), [](const Start& a, const Start& b) {
      return a.at != b.at ? a.at < b.at : a.lane < b.lane;
    });
    for (const Start& st : starts) out.push_back(cells[st.pos].cell);
    return out;
  }
  std::stable_sort(known_pos.begin(), known_pos.end(),
                   [&](size_t a, size_t b) { return *cells[a].seconds > *cells[b].seconds; });
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

std::map<CellShape, double> known_durations(store::Store& store,
                                            const std::vector<std::string>& argv_template,
                                            const std::string& backend,
                                            std::optional<int64_t> sweep_id, int look_back) {
  std::map<CellShape, double> out;
  auto take = [&](int64_t id) {
    for (const JobRecord& cell : store.sweep_cells(id))
      if (auto d = measured_duration(cell))  // keeps the first seen
        out.emplace(CellShape{cell.argv, cell.gpu_type, cell.gpu_count}, *d);
  };
  if (sweep_id) take(*sweep_id);
  for (const store::SweepRecord& s : store.sweeps(look_back))  // newest first
    if ((!sweep_id || s.id != *sweep_id) && s.argv == argv_template && s.backend == backend)
      take(s.id);
  return out;
}

}  // namespace nodus::engine
