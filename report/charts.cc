#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/escape.h"
#include "report/format.h"
#include "report/series.h"

namespace nodus::report {
namespace {

std::string num(double v) {
  if (!std::isfinite(v)) v = 0;  // a NaN from the store must not break the drawing
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Long labels are cut in the chart (the full text stays in the tooltip and the table).
std::string short_label(const std::string& label, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < label.size(); ++i) {
    if ((static_cast<unsigned char>(label[i]) & 0xC0) == 0x80) continue;  // UTF-8 continuation
    if (++chars > max_chars) return label.substr(0, i) + "\xE2\x80\xA6";  // "…"
  }
  return label;
}

std::string text_el(const std::string& cls, double x, double y, const std::string& anchor,
                    const std::string& escaped) {
  return "<text class=\"" + cls + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" +
         anchor + "\">" + escaped + "</text>";
}

std::string line_el(const std::string& cls, double x1, double y1, double x2, double y2) {
  return "<line class=\"" + cls + "\" x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" +
         num(x2) + "\" y2=\"" + num(y2) + "\"/>";
}

// Time axis unit that keeps tick labels short.
struct TimeUnit {
  double seconds;
  const char* name;
};
TimeUnit time_unit(double end_s) {
  if (end_s <= 300) return {1, "s"};
  if (end_s <= 5 * 3600) return {60, "min"};
  return {3600, "h"};
}

}  // namespace

std::string render_bar_chart(const BarChart& chart) {
  constexpr double kWidth = 380, kLabelWidth = 112, kRight = 86, kTop = 8, kRow = 32, kBar = 20;
  constexpr double kAxis = 40;
  const double plot_left = kLabelWidth, plot_right = kWidth - kRight;
  const double plot_bottom = kTop + kRow * static_cast<double>(chart.bars.size());
  const double height = plot_bottom + kAxis;

  double largest = 0;
  for (const auto& bar : chart.bars) largest = std::max(largest, bar.value);
  const AxisScale scale = nice_scale(largest, 3);
  const auto x_of = [&](double v) {
    return plot_left + (plot_right - plot_left) * std::clamp(v / scale.max, 0.0, 1.0);
  };

  std::string svg = "<svg class=\"chart\" data-chart=\"" + html_escape(chart.id) +
                    "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
                    "\" role=\"img\"><title>" + html_escape(chart.title) + "</title>";
  svg += "<g class=\"axis\">";
  for (double tick : scale.ticks) {
    const double x = x_of(tick);
    svg += line_el("grid", x, kTop - 4, x, plot_bottom);
    const std::string label = (chart.money ? "$" : "") + format_tick(tick, scale.step);
    svg += text_el("tick", x, plot_bottom + 14, "middle", html_escape(label));
  }
  svg += line_el("baseline", plot_left, kTop - 4, plot_left, plot_bottom);
  svg += text_el("axis-title", (plot_left + plot_right) / 2, height - 6, "middle",
                 html_escape(chart.axis_title));
  svg += "</g>";

  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& bar = chart.bars[i];
    const double row_top = kTop + kRow * static_cast<double>(i);
    const double y = row_top + (kRow - kBar) / 2;
    const double mid = y + kBar / 2 + 4;  // text baseline centred on the bar
    const double width = std::max(1.0, x_of(bar.value) - plot_left);
    svg += "<g class=\"row" + std::string(bar.best ? " best" : "") + "\">";
    svg += text_el("label", plot_left - 8, mid, "end", html_escape(short_label(bar.label, 18)));
    svg += "<rect class=\"bar" + std::string(bar.best ? " best" : "") + "\" x=\"" + num(plot_left) +
           "\" y=\"" + num(y) + "\" width=\"" + num(width) + "\" height=\"" + num(kBar) +
           "\" rx=\"2\"><title>" + html_escape(bar.label + ": " + bar.value_text) +
           "</title></rect>";
    std::string value = html_escape(bar.value_text);
    if (bar.best) value += "<tspan class=\"best-tag\" dx=\"6\">best</tspan>";
    svg += text_el("value", plot_left + width + 5, mid, "start", value);
    svg += "</g>";
  }
  return svg + "</svg>";
}

std::string render_util_chart(size_t cell_index, const Cell& cell) {
  constexpr double kWidth = 360, kHeight = 160, kLeft = 42, kRight = 12, kTop = 10, kBottom = 38;
  const double plot_right = kWidth - kRight, plot_bottom = kHeight - kBottom;
  const double end_s = std::max({cell.wall_s, cell.util.back().t, 1e-3});
  const TimeUnit unit = time_unit(end_s);
  // The axis ends where the run ended; ticks at round values inside it.
  const AxisScale scale = nice_scale(end_s / unit.seconds, 5);
  const auto x_of = [&](double t) {
    return kLeft + (plot_right - kLeft) * std::clamp(t / end_s, 0.0, 1.0);
  };
  const auto y_of = [&](double util) {
    return plot_bottom - (plot_bottom - kTop) * std::clamp(util, 0.0, 100.0) / 100;
  };
  const std::string id = std::to_string(cell_index);

  std::string svg = "<svg class=\"chart util-chart\" data-cell=\"" + id + "\" viewBox=\"0 0 " +
                    num(kWidth) + " " + num(kHeight) + "\" role=\"img\"><title>" +
                    html_escape("GPU utilization over time, " + cell.label) + "</title>";
  // One pattern per chart: an id shared across inline SVGs would tie each chart to another.
  svg += "<defs><pattern id=\"idle-hatch-" + id +
         "\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
         "patternTransform=\"rotate(45)\"><rect class=\"hatch-bg\" width=\"6\" height=\"6\"/>"
         "<line class=\"hatch-line\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\"/></pattern></defs>";

  // Idle stretches first, under the lines; shapes closer than a pixel are one shape.
  const double seconds_per_px = end_s / (plot_right - kLeft);
  for (const auto& [from, to] :
       merge_close(idle_stretches(cell.util, end_s, kIdleUtilPercent), seconds_per_px)) {
    svg += "<rect class=\"idle\" x=\"" + num(x_of(from)) + "\" y=\"" + num(kTop) + "\" width=\"" +
           num(std::max(1.0, x_of(to) - x_of(from))) + "\" height=\"" + num(plot_bottom - kTop) +
           "\" fill=\"url(#idle-hatch-" + id + ")\"/>";
  }

  svg += "<g class=\"axis\">";
  for (double u : {0.0, 25.0, 50.0, 75.0, 100.0}) {
    svg += line_el("grid", kLeft, y_of(u), plot_right, y_of(u));
    if (static_cast<int>(u) % 50 == 0)
      svg += text_el("tick", kLeft - 5, y_of(u) + 4, "end", format_tick(u, 50));
  }
  svg += line_el("baseline", kLeft, plot_bottom, plot_right, plot_bottom);
  for (double tick : scale.ticks) {
    if (tick * unit.seconds > end_s * (1 + 1e-9)) break;
    const double x = x_of(tick * unit.seconds);
    svg += line_el("tick-mark", x, plot_bottom, x, plot_bottom + 4);
    svg += text_el("tick", x, plot_bottom + 16, "middle", format_tick(tick, scale.step));
  }
  svg += line_el("threshold", kLeft, y_of(kIdleUtilPercent), plot_right, y_of(kIdleUtilPercent));
  svg += text_el("axis-title", (kLeft + plot_right) / 2, kHeight - 4, "middle",
                 std::string("time since start (") + unit.name + ")");
  svg += "<text class=\"axis-title\" transform=\"translate(12 " + num((kTop + plot_bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">GPU util (%)</text>";
  svg += "</g>";

  const auto polyline = [&](const std::string& cls, const std::vector<UtilPoint>& points) {
    std::string coords;
    for (const auto& p : points) {
      if (!coords.empty()) coords += ' ';
      coords += num(x_of(p.t)) + "," + num(y_of(p.util));
    }
    return "<polyline class=\"" + cls + "\" points=\"" + coords + "\"/>";
  };
  // Every sample (thinned to an envelope on long runs), and over it a rolling average, which
  // stays readable when a sawtooth of thousands of samples fills the chart.
  const size_t window = cell.util.size() / 16;
  const bool averaged = cell.util.size() >= 48;
  svg += polyline(averaged ? "util" : "util solo", thin_util_points(cell.util, kMaxUtilPoints));
  if (averaged) {
    const std::vector<UtilPoint> mean = rolling_mean(cell.util, window);
    std::vector<UtilPoint> sparse;
    const size_t stride = (mean.size() + 299) / 300;
    for (size_t i = 0; i < mean.size(); i += stride) sparse.push_back(mean[i]);
    if (sparse.back().t != mean.back().t) sparse.push_back(mean.back());
    svg += polyline("util-mean", sparse);
  }
  return svg + "</svg>";
}

}  // namespace nodus::report
