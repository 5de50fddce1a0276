#include "engine/duration_model.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace nodus::engine {

namespace {

// Backfitting (each parameter's effects as the mean residual of the others, in turn) converges
// to the least-squares main effects, also for the unbalanced sets of cells a running sweep has.
constexpr int kMaxRounds = 100;
constexpr double kConverged = 1e-10;
constexpr double kMinAdjustedR2 = 0.5;

}  // namespace

std::optional<DurationModel> DurationModel::fit(const std::vector<ParamCell>& cells) {
  std::vector<const ParamCell*> obs;
  for (const ParamCell& c : cells)
    if (c.seconds && *c.seconds > 0 && std::isfinite(*c.seconds)) obs.push_back(&c);
  if (obs.empty()) return std::nullopt;
  const size_t params = obs.front()->values.size();
  for (const ParamCell* c : obs)
    if (c->values.size() != params) return std::nullopt;

  // Each observation's value of each parameter as a small index.
  std::vector<std::map<std::string, size_t>> index(params);
  std::vector<std::vector<size_t>> at(obs.size(), std::vector<size_t>(params));
  std::vector<double> y;
  for (size_t k = 0; k < obs.size(); ++k) {
    y.push_back(std::log(*obs[k]->seconds));
    for (size_t p = 0; p < params; ++p)
      at[k][p] = index[p].emplace(obs[k]->values[p], index[p].size()).first->second;
  }
  const double n = static_cast<double>(obs.size());
  double unknowns = 1;
  for (const auto& values : index) unknowns += static_cast<double>(values.size()) - 1;
  if (n - unknowns < 1) return std::nullopt;  // as many unknowns as cells: it fits anything

  double mean = 0;
  for (double v : y) mean += v;
  mean /= n;
  std::vector<std::vector<double>> effect(params);
  for (size_t p = 0; p < params; ++p) effect[p].assign(index[p].size(), 0.0);
  auto fitted = [&](size_t k, size_t skip) {
    double f = mean;
    for (size_t p = 0; p < params; ++p)
      if (p != skip) f += effect[p][at[k][p]];
    return f;
  };
  for (int round = 0; round < kMaxRounds; ++round) {
    double change = 0;
    for (size_t p = 0; p < params; ++p) {
      std::vector<double> sum(index[p].size(), 0.0), count(index[p].size(), 0.0);
      for (size_t k = 0; k < obs.size(); ++k) {
        sum[at[k][p]] += y[k] - fitted(k, p);
        count[at[k][p]] += 1;
      }
      for (size_t v = 0; v < sum.size(); ++v) {
        const double next = sum[v] / count[v];
        change = std::max(change, std::abs(next - effect[p][v]));
        effect[p][v] = next;
      }
    }
    if (change < kConverged) break;
  }

  double total = 0, residual = 0;
  for (size_t k = 0; k < obs.size(); ++k) {
    total += (y[k] - mean) * (y[k] - mean);
    residual += (y[k] - fitted(k, params)) * (y[k] - fitted(k, params));
  }
  if (total <= 0 || n < 2) return std::nullopt;  // every cell as long: nothing to order by
  const double r2 = 1 - (residual / (n - unknowns)) / (total / (n - 1));
  if (!(r2 > kMinAdjustedR2)) return std::nullopt;

  DurationModel m;
  m.mean_ = mean;
  m.adjusted_r2_ = r2;
  m.effects_.resize(params);
  for (size_t p = 0; p < params; ++p) {
    double largest = effect[p].front();
    for (const auto& [value, v] : index[p]) {
      m.effects_[p].emplace(value, effect[p][v]);
      largest = std::max(largest, effect[p][v]);
    }
    m.largest_.push_back(largest);
  }
  return m;
}

double DurationModel::estimate(const ParamCell& cell) const {
  if (cell.seconds) return *cell.seconds;
  double log_s = mean_;
  for (size_t p = 0; p < effects_.size(); ++p) {
    auto it = p < cell.values.size() ? effects_[p].find(cell.values[p]) : effects_[p].end();
    log_s += it != effects_[p].end() ? it->second : largest_[p];
  }
  return std::exp(log_s);
}

EstimatedOrder order_by_estimate(const std::vector<ParamCell>& cells,
                                 const std::vector<size_t>& pending) {
  EstimatedOrder out;
  for (const ParamCell& c : cells) out.ended += c.seconds.has_value();
  auto model = DurationModel::fit(cells);
  if (!model) {
    out.order = pending;
    return out;
  }
  out.adjusted_r2 = model->adjusted_r2();
  std::vector<std::pair<double, size_t>> keyed;
  for (size_t i : pending) keyed.emplace_back(model->estimate(cells[i]), i);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& k : keyed) out.order.push_back(k.second);
  return out;
}

}  // namespace nodus::engine
