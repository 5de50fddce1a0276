#include "telemetry/steady_accumulator.h"

namespace nodus::telemetry {

void SteadyAccumulator::add_gpu(const GpuSample& s) {
  whole_.add_gpu(s);
  if (!in_slice(s.t)) return;
  slice_.add_gpu(s);
  slice_has_rows_ = true;
}

void SteadyAccumulator::add_host(const HostSample& h) {
  whole_.add_host(h);
  if (!in_slice(h.t)) return;
  slice_.add_host(h);
  slice_has_rows_ = true;
}

void SteadyAccumulator::add_metric(const MetricPoint& p) {
  whole_.add_metric(p);
  if (!in_slice(p.t)) return;
  slice_.add_metric(p);
  slice_has_rows_ = true;  // any report counts, as in slice_from(): not only data_wait
}

SteadyAccumulator::Result SteadyAccumulator::finish(double cost, double wall_s) {
  Result r;
  r.whole = whole_.finish(cost, wall_s);
  if (!slice_has_rows_) {
    r.steady = r.whole;
    return r;
  }
  r.steady = slice_.finish(cost, wall_s);
  r.steady.idle_usd = r.whole.idle_usd;  // money is whole-job
  return r;
}

}  // namespace nodus::telemetry
