// The step timeline of a profiled job: one step of torch.profiler's trace drawn as two rows
// (the training loop's CPU thread, the GPU), with the GPU's idle gaps and the host-device
// syncs marked, so that "the GPU waits for .item()" or "for the next batch" is seen, not told.
#include <algorithm>
#include <cstdio>

#include "report/charts.h"
#include "report/escape.h"

namespace nodus::report {
namespace {

constexpr double kW = 800, kLeft = 46, kRight = 12, kTop = 10, kRow = 26, kGap = 12;

std::string n(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string rect(const std::string& cls, double x, double y, double w, double h) {
  return "<rect class=\"" + cls + "\" x=\"" + n(x) + "\" y=\"" + n(y) + "\" width=\"" +
         n(std::max(w, 0.6)) + "\" height=\"" + n(h) + "\"/>";
}

std::string text(const std::string& cls, double x, double y, const std::string& s,
                 const char* anchor = "start") {
  return "<text class=\"" + cls + "\" x=\"" + n(x) + "\" y=\"" + n(y) + "\" text-anchor=\"" +
         anchor + "\">" + html_escape(s) + "</text>";
}

}  // namespace

std::string render_step_timeline(size_t cell_index, const StepTimeline& t) {
  const double plot = kW - kLeft - kRight;
  const double span = t.step_ms > 0 ? t.step_ms : 1;
  auto x = [&](double ms) { return kLeft + std::clamp(ms / span, 0.0, 1.0) * plot; };
  const double cpu_y = kTop, gpu_y = kTop + kRow + kGap;
  const double axis_y = (t.cuda ? gpu_y + kRow : cpu_y + kRow) + 14;
  const double height = axis_y + 8;
  std::string svg = "<svg class=\"chart step-timeline\" data-cell=\"" + std::to_string(cell_index) +
                    "\" viewBox=\"0 0 " + n(kW) + " " + n(height) +
                    "\" role=\"img\" aria-label=\"one training step: CPU and GPU rows\">";
  svg += text("axis-label", kLeft - 6, cpu_y + kRow * 0.65, "CPU", "end");
  svg += rect("lane", kLeft, cpu_y, plot, kRow);
  for (const auto& [a, b] : t.cpu) svg += rect("cpu", x(a), cpu_y, x(b) - x(a), kRow);
  if (t.cuda) {
    svg += text("axis-label", kLeft - 6, gpu_y + kRow * 0.65, "GPU", "end");
    svg += rect("lane", kLeft, gpu_y, plot, kRow);
    // Gaps: the complement of the GPU's busy boxes, split where the loop fetched a batch.
    double cursor = 0;
    auto gap = [&](double a, double b) {
      if (b <= a) return;
      double at = a;
      for (const auto& [fa, fb] : t.fetch) {
        double lo = std::max(a, fa), hi = std::min(b, fb);
        if (hi <= lo) continue;
        if (lo > at) svg += rect("gap", x(at), gpu_y, x(lo) - x(at), kRow);
        svg += rect("gap fetch", x(lo), gpu_y, x(hi) - x(lo), kRow);
        at = hi;
      }
      if (b > at) svg += rect("gap", x(at), gpu_y, x(b) - x(at), kRow);
    };
    for (const auto& [a, b] : t.gpu) {
      gap(cursor, a);
      svg += rect("gpu", x(a), gpu_y, x(b) - x(a), kRow);
      cursor = std::max(cursor, b);
    }
    gap(cursor, span);
  }
  for (const auto& [at, what] : t.syncs) {
    double sx = x(at);
    svg += "<line class=\"sync\" x1=\"" + n(sx) + "\" y1=\"" + n(cpu_y - 2) + "\" x2=\"" + n(sx) +
           "\" y2=\"" + n((t.cuda ? gpu_y : cpu_y) + kRow + 2) + "\"><title>" + html_escape(what) +
           "</title></line>";
  }
  svg += text("tick", kLeft, axis_y, "0 ms");
  svg += text("tick", kLeft + plot, axis_y, n(t.step_ms) + " ms", "end");
  return svg + "</svg>";
}

}  // namespace nodus::report
