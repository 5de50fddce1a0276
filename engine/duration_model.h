#pragma once
// What the cells of a sweep that ended say about the length of those still to start. On a first
// run no cell's duration is known in advance, but the cells of a grid are not unrelated: a larger
// batch size or model takes longer whatever the other parameters are. DurationModel fits each
// parameter value's effect on the logarithm of the duration (a product of factors, one per
// parameter: the usual shape of "twice the batch, twice the time"), and the sweep runner offers
// the pending cells longest estimate first, as soon as the model explains the cells that ended.
//
// It only reorders when the fit is worth more than the mean: with fewer ended cells than the model
// has unknowns, or when the parameters explain less than half of the spread (adjusted R^2 <= 0.5;
// `i=0..31` with unrelated durations, say), it says nothing and the order stays as it was. A
// Python model of the sweep's scheduler (32 cells on 8 GPUs, 300 draws, durations the product of
// a model factor and a batch factor with 10% noise) put grid order at 1.27 x the lower bound and
// this at 1.07; on unrelated durations both were 1.10.
//
// Pure: no clock, store or process. The parameter values are compared as strings (categories):
// a value no ended cell had counts as the largest effect seen for its parameter, since it may be
// the long one, and starting it early is the cheap way to find out.

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nodus::engine {

struct ParamCell {
  std::vector<std::string> values;  // one per parameter, the same parameter order for every cell
  std::optional<double> seconds;    // how long it ran (measured_duration); nullopt: not ended
};

class DurationModel {
 public:
  // The fit over the cells whose seconds are known (and > 0); nullopt when it explains too
  // little to order by (see above).
  static std::optional<DurationModel> fit(const std::vector<ParamCell>& cells);

  // The estimate in seconds: the cell's own when known, else the fitted product.
  double estimate(const ParamCell& cell) const;

  double adjusted_r2() const { return adjusted_r2_; }

 private:
  double mean_ = 0;                                               // of log seconds
  std::vector<std::unordered_map<std::string, double>> effects_;  // per parameter
  std::vector<double> largest_;                                   // per parameter
  double adjusted_r2_ = 0;
};

struct EstimatedOrder {
  std::vector<size_t> order;
  std::optional<double> adjusted_r2;  // of the fit it follows; nullopt: the model said nothing
  size_t ended = 0;                   // the cells with a duration it was fitted to
};

// `pending` (indices into `cells`) longest estimate first, ties in the order given; `pending`
// as given when the model says nothing.
EstimatedOrder order_by_estimate(const std::vector<ParamCell>& cells,
                                 const std::vector<size_t>& pending);

}  // namespace nodus::engine
