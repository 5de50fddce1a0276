#include "telemetry/phases.h"

#include <cstdio>

#include "core/parse.h"

namespace nodus::telemetry {

std::optional<Warmup> parse_warmup(const std::string& text) {
  Warmup w;
  w.text = text;
  if (text.empty()) return std::nullopt;
  bool digits = text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    if (text.size() > 9) return std::nullopt;
    w.batches = std::stoi(text);
    return w;
  }
  // No warm-up at all: "0s" (durations are otherwise positive).
  if (size_t unit = text.find_first_not_of('0');
      unit > 0 && unit != std::string::npos &&
      (text.substr(unit) == "s" || text.substr(unit) == "ms")) {
    w.seconds = 0;
    return w;
  }
  auto d = parse_duration(text, "--warmup");
  if (!d) return std::nullopt;
  w.seconds = static_cast<double>(d->count()) / 1000.0;
  return w;
}

std::optional<double> Phases::startup_s() const {
  if (!first_batch_t) return std::nullopt;
  return std::max(0.0, *first_batch_t - start_t);
}

std::optional<double> Phases::warmup_s() const {
  if (!first_batch_t || !steady_t) return std::nullopt;
  return std::max(0.0, *steady_t - *first_batch_t);
}

std::optional<double> Phases::steady_s() const {
  if (!steady_t) return std::nullopt;
  return std::max(0.0, end_t - *steady_t);
}

SummaryInput slice_from(const SummaryInput& in, double from) {
  SummaryInput out;
  out.cost = in.cost;
  out.wall_s = in.wall_s;
  for (const auto& g : in.gpu)
    if (g.t >= from) out.gpu.push_back(g);
  for (const auto& h : in.host)
    if (h.t >= from) out.host.push_back(h);
  for (const auto& m : in.metrics)
    if (m.t >= from) out.metrics.push_back(m);
  return out;
}

Summary steady_summary(const SummaryInput& whole, const Phases& phases) {
  Summary all = summarize(whole);
  if (!phases.steady_t) return all;
  SummaryInput part = slice_from(whole, *phases.steady_t);
  if (part.gpu.empty() && part.metrics.empty() && part.host.empty()) return all;
  Summary s = summarize(part);
  s.cost = all.cost;
  s.wall_s = all.wall_s;
  s.idle_usd = all.idle_usd;  // money is whole-job
  return s;
}

std::string describe_phases(const Phases& p, double rate_usd_per_s) {
  if (!p.first_batch_t) return "";
  char buf[160];
  double up = *p.startup_s();
  std::string out;
  if (rate_usd_per_s > 0)
    std::snprintf(buf, sizeof buf, "start-up %.1f s, %s", up,
                  format_usd(up * rate_usd_per_s).c_str());
  else
    std::snprintf(buf, sizeof buf, "start-up %.1f s", up);
  out = buf;
  if (auto w = p.warmup_s()) {
    std::snprintf(buf, sizeof buf, "; warm-up %.1f s; steady %.1f s", *w, *p.steady_s());
    out += buf;
  } else {
    out += "; still in warm-up at the end (figures include it)";
  }
  return out + " (" + p.source + ")";
}

}  // namespace nodus::telemetry
