// render_html: the page, section by section. Every user string goes through html_escape (here
// as `esc`) or a chart renderer that escapes it; nothing else reaches the page but our own
// markup, so the tests can hold the page to "no script, no external reference".

#include <cmath>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/parse.h"
#include "report/charts.h"
#include "report/escape.h"
#include "report/format.h"
#include "report/page_style.h"
#include "report/report.h"

namespace nodus::report {
namespace {

std::string esc(const std::string& s) { return html_escape(s); }

const char* const kCsp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
const char* const kMissing = "<span class=\"na\">\xE2\x80\x94</span>";  // an em dash

bool is_sweep(const ReportData& d) { return d.kind == ReportKind::kSweep; }

// Final states other than completed read as trouble (failed, timeout, cost-cap, ...); running
// or waiting cells of a sweep in progress do not.
bool ended_badly(const std::string& status) {
  const std::optional<JobState> state = job_state_from_string(status);
  return state && is_final(*state) && *state != JobState::kCompleted;
}

// The MFU column and figure appear only where some cell's FLOPs were counted.
bool any_mfu(const ReportData& d) {
  for (const auto& c : d.cells)
    if (c.mfu) return true;
  return false;
}

size_t completed_cells(const ReportData& d) {
  size_t n = 0;
  // "completed (warm-up only)" completed too.
  for (const auto& c : d.cells) n += c.status.rfind("completed", 0) == 0;
  return n;
}

std::string header(const ReportData& d) {
  std::string out = "<header><p class=\"eyebrow\">nodus " +
                    std::string(is_sweep(d) ? "sweep" : "job") + " report</p>";
  out += "<h1>" + esc(d.title) + "</h1><p class=\"meta\">";
  out += "<span>" + esc(gpu_text(d.gpu_type, d.gpu_count)) + (is_sweep(d) ? " per cell" : "") +
         "</span>";
  if (d.rate_per_gpu_hour > 0)
    out += "<span>" + esc(format_usd(d.rate_per_gpu_hour)) + " per GPU-hour</span>";
  if (!d.backend.empty()) out += "<span>" + esc(d.backend) + " backend</span>";
  const std::string date = format_date_utc(d.created_at);
  if (!date.empty()) out += "<span>" + esc(date) + "</span>";
  return out + "</p></header>";
}

std::string kpi(const std::string& name, const std::string& value_html) {
  return "<div><dt>" + esc(name) + "</dt><dd>" + value_html + "</dd></div>";
}

std::string summary(const ReportData& d) {
  std::string out = "<section class=\"summary\">";
  if (!d.summary.empty()) out += "<p class=\"answer\">" + esc(d.summary) + "</p>";
  out += "<dl class=\"kpis\">";
  out += kpi("Total cost", esc(format_usd(d.totals.cost_usd)));
  out += kpi("Wall time", esc(format_seconds(d.totals.wall_s)));
  if (is_sweep(d)) {
    const size_t completed = completed_cells(d);
    const std::string done = completed == d.cells.size() ? "all" : std::to_string(completed);
    out += kpi("Cells", std::to_string(d.cells.size()) + "<small>" + done + " completed</small>");
  } else {
    out += kpi("Status", d.cells.empty() ? kMissing : esc(d.cells.front().status));
  }
  out += kpi("Spent on idle GPU time",
             d.totals.idle_usd ? esc(format_usd(*d.totals.idle_usd)) : kMissing);
  // Idle dollars' twin: the arithmetic paid for and not used while the GPU was busy or not.
  if (!is_sweep(d) && !d.cells.empty() && d.cells.front().mfu) {
    const Cell& c = d.cells.front();
    out += kpi("MFU",
               esc(format_percent(*c.mfu * 100)) +
                   (c.unused_usd_per_hour ? "<small>" + esc(format_usd(*c.unused_usd_per_hour)) +
                                                "/h of arithmetic paid for and unused</small>"
                                          : std::string()));
  }
  return out + "</dl></section>";
}

std::string setup(const ReportData& d) {
  std::string out = "<section class=\"setup\"><h2>Setup</h2><dl>";
  out += "<dt class=\"command\">Command</dt><dd><pre><code>" + esc(shell_join(d.command)) +
         "</code></pre></dd>";
  if (!d.grid.empty()) {
    out += "<dt>Grid</dt><dd>";
    for (const auto& axis : d.grid) {
      std::string values;
      for (const auto& v : axis.values) values += (values.empty() ? "" : ", ") + v;
      out += "<div class=\"grid-axis\"><b>" + esc(axis.name) + "</b> = " + esc(values) + "</div>";
    }
    out += "</dd>";
  }
  out += "<dt>GPU</dt><dd>" + esc(gpu_text(d.gpu_type, d.gpu_count)) +
         (is_sweep(d) ? " per cell" : "") + "</dd>";
  out += "<dt>Rate</dt><dd>" + esc(format_usd(d.rate_per_gpu_hour)) + " per GPU-hour</dd>";
  if (!d.backend.empty()) out += "<dt>Backend</dt><dd>" + esc(d.backend) + "</dd>";
  const std::string date = format_date_utc(d.created_at);
  if (!date.empty()) out += "<dt>Date</dt><dd>" + esc(date) + "</dd>";
  return out + "</dl></section>";
}

// Parameter columns in the order of the first cell that has parameters.
std::vector<std::string> param_names(const ReportData& d) {
  std::vector<std::string> names;
  for (const auto& c : d.cells) {
    for (const auto& [name, value] : c.params) {
      bool seen = false;
      for (const auto& n : names) seen = seen || n == name;
      if (!seen) names.push_back(name);
    }
  }
  return names;
}

std::string param_value(const Cell& c, const std::string& name) {
  for (const auto& [n, v] : c.params)
    if (n == name) return v;
  return "";
}

std::string optional_cell(const std::optional<double>& v, std::string (*fmt)(double)) {
  return "<td class=\"num\">" + (v ? esc(fmt(*v)) : std::string(kMissing)) + "</td>";
}

std::string usd(double v) { return format_usd(v); }
std::string percent(double v) { return format_percent(v); }
std::string fraction(double v) { return format_percent(v * 100); }

std::string comparison(const ReportData& d) {
  const std::vector<std::string> params = param_names(d);
  std::string out = "<section><h2>Comparison</h2><div class=\"table-wrap\">";
  out += "<table class=\"comparison\"><thead><tr>";
  if (params.empty()) out += "<th>Cell</th>";
  for (const auto& p : params) out += "<th>" + esc(p) + "</th>";
  out += "<th>Status</th><th class=\"num\">Wall</th><th class=\"num\">Cost</th>";
  out +=
      "<th class=\"num\">Throughput<span class=\"unit\">" + esc(d.throughput_unit) + "</span></th>";
  out += "<th class=\"num\">$/M " + esc(work_items(d.throughput_unit)) +
         "</th><th class=\"num\">Data wait</th>";
  out += "<th class=\"num\">GPU util</th>";
  if (any_mfu(d)) out += "<th class=\"num\">MFU</th>";
  out += "<th class=\"num\">Idle $</th><th>Verdict</th>";
  out += "</tr></thead><tbody>";
  for (const auto& c : d.cells) {
    out += c.best ? "<tr class=\"best\">" : "<tr>";
    const std::string badge = c.best ? "<span class=\"badge\">best</span>" : "";
    if (params.empty()) out += "<td>" + esc(c.label) + badge + "</td>";
    for (size_t i = 0; i < params.size(); ++i)
      out += "<td>" + esc(param_value(c, params[i])) + (i == 0 ? badge : "") + "</td>";
    out += std::string("<td") + (ended_badly(c.status) ? " class=\"status-bad\"" : "") + ">" +
           esc(c.status) + "</td>";
    out += "<td class=\"num\">" + esc(format_seconds(c.wall_s)) + "</td>";
    out += "<td class=\"num\">" + esc(format_usd(c.cost_usd)) + "</td>";
    out += optional_cell(c.throughput, format_number);
    out += optional_cell(c.usd_per_million, usd);
    out += optional_cell(c.data_wait, fraction);
    out += optional_cell(c.util_mean, percent);
    if (any_mfu(d)) out += optional_cell(c.mfu, fraction);
    out += optional_cell(c.idle_usd, usd);
    out += "<td class=\"verdict\">" + esc(c.verdict) + "</td></tr>";
  }
  return out + "</tbody></table></div></section>";
}

// One bar chart of the sweep: what it shows and how to read each cell's value.
struct BarFigure {
  std::string id;          // data-chart
  std::string caption;     // "Throughput"
  std::string axis_title;  // with the unit
  bool higher_is_better = false;
  bool money = false;
  std::optional<double> (*value_of)(const Cell&);
  std::string (*format)(double);
};

// Cells without the value have no bar and are named under the chart.
std::string bar_figure(const ReportData& d, const BarFigure& f) {
  const char* hint = f.higher_is_better ? "higher is better" : "lower is better";
  BarChart chart{f.id, f.caption + " per cell", f.axis_title + " (" + hint + ")", f.money, {}};
  std::string missing;
  for (const auto& c : d.cells) {
    const std::optional<double> v = f.value_of(c);
    if (v && std::isfinite(*v))
      chart.bars.push_back({c.label, *v, f.format(*v), c.best});
    else
      missing += (missing.empty() ? "" : ", ") + c.label;
  }
  std::string out = "<figure><figcaption>" + esc(f.caption) + "<span class=\"hint\">" + hint +
                    "</span></figcaption>";
  if (!chart.bars.empty()) out += render_bar_chart(chart);
  if (!missing.empty()) out += "<p class=\"no-data\">No value for " + esc(missing) + ".</p>";
  return out + "</figure>";
}

std::string bar_charts(const ReportData& d) {
  const std::string items = work_items(d.throughput_unit);
  const BarFigure figures[] = {
      {"throughput", "Throughput", d.throughput_unit, true, false,
       [](const Cell& c) { return c.throughput; }, format_number},
      {"cost", "Cost", "cost per cell, USD", false, true,
       [](const Cell& c) { return std::optional<double>(c.cost_usd); }, usd},
      {"usd-per-million", "$ per million " + items, "USD per million " + items, false, true,
       [](const Cell& c) { return c.usd_per_million; }, usd},
  };
  std::string out =
      "<section><h2>Throughput and cost per cell</h2><p class=\"section-note\">The best cell is "
      "the dark bar tagged &ldquo;best&rdquo;.</p><div class=\"charts\">";
  for (const auto& f : figures) out += bar_figure(d, f);
  return out + "</div></section>";
}

std::string idle_share_text(const Cell& c) {
  size_t idle = 0;
  for (const auto& p : c.util) idle += (p.util < kIdleUtilPercent);
  const double share = c.util.empty() ? 0 : 100.0 * idle / c.util.size();
  std::string mean = c.util_mean ? "mean " + format_percent(*c.util_mean) + " \xC2\xB7 " : "";
  return mean + "idle " + format_percent(share);
}

std::string utilization(const ReportData& d) {
  std::string out = "<section><h2>GPU utilization over time</h2>";
  out +=
      "<p class=\"section-note\">Percent of time a kernel ran, per sample; each chart spans "
      "its own cell\xE2\x80\x99s run.</p><p class=\"legend\">"
      "<span><i class=\"swatch sample\"></i>GPU utilization, each sample</span>"
      "<span><i class=\"swatch line\"></i>rolling average</span>"
      "<span><i class=\"swatch idle\"></i>idle: below " +
      format_percent(kIdleUtilPercent) +
      "</span><span><i class=\"swatch threshold\"></i>idle threshold</span></p>";
  out += d.cells.size() == 1 ? "<div class=\"multiples single\">" : "<div class=\"multiples\">";
  for (size_t i = 0; i < d.cells.size(); ++i) {
    const Cell& c = d.cells[i];
    out += std::string("<figure class=\"util-card") + (c.best ? " best" : "") + "\">";
    out += "<figcaption><span>" + esc(c.label) +
           (c.best ? "<span class=\"badge\">best</span>" : "") + "</span>";
    if (c.util.empty()) {
      out += "</figcaption><p class=\"no-data\">No GPU samples.</p></figure>";
      continue;
    }
    out += "<span class=\"hint\">" + esc(idle_share_text(c)) + "</span></figcaption>";
    out += render_util_chart(i, c) + "</figure>";
  }
  return out + "</div></section>";
}

std::string timelines(const ReportData& d) {
  bool any = false;
  for (const auto& c : d.cells) any = any || c.timeline;
  if (!any) return "";
  std::string out =
      "<section><h2>Inside one step</h2><p class=\"section-note\">One profiled step (the "
      "median-length one of torch.profiler\xE2\x80\x99s active steps): what the training "
      "loop\xE2\x80\x99s thread and the GPU were doing.</p><p class=\"legend\">"
      "<span><i class=\"swatch tl-cpu\"></i>CPU: the loop\xE2\x80\x99s thread in an op</span>"
      "<span><i class=\"swatch tl-gpu\"></i>GPU: kernels and copies</span>"
      "<span><i class=\"swatch tl-fetch\"></i>GPU idle while fetching the next batch</span>"
      "<span><i class=\"swatch tl-gap\"></i>GPU idle inside the step</span>"
      "<span><i class=\"swatch tl-sync\"></i>host-device sync</span></p>"
      "<div class=\"timelines\">";
  for (size_t i = 0; i < d.cells.size(); ++i) {
    const Cell& c = d.cells[i];
    if (!c.timeline) continue;
    out += "<figure class=\"util-card\"><figcaption><span>" + esc(c.label) +
           "</span><span class=\"hint\">" + esc(c.timeline->caption) + "</span></figcaption>" +
           render_step_timeline(i, *c.timeline) + "</figure>";
  }
  return out + "</div></section>";
}

std::string diagnosis(const ReportData& d) {
  std::string out =
      "<section><h2>Diagnosis</h2><p class=\"section-note\">What each cell\xE2\x80\x99s"
      " numbers point to, and the first fix to try.</p><div class=\"diagnoses" +
      std::string(d.cells.size() == 1 ? " single" : "") + "\">";
  for (const auto& c : d.cells) {
    out += std::string("<article class=\"diagnosis") + (c.best ? " best" : "") + "\"><h3>" +
           esc(c.label) + (c.best ? "<span class=\"badge\">best</span>" : "") + "</h3>";
    if (!c.verdict.empty()) out += "<p class=\"verdict\">" + esc(c.verdict) + "</p>";
    if (c.diagnosis.empty()) {
      out += "<p class=\"evidence\">Nothing to fix found in this cell\xE2\x80\x99s numbers.</p>";
    } else {
      out += "<ul>";
      for (const auto& f : c.diagnosis) {
        out += "<li><p class=\"finding\">" + esc(f.cause) + "</p>";
        if (!f.fix.empty())
          out += "<p class=\"kv\"><span class=\"k\">Fix</span><span>" + esc(f.fix) + "</span></p>";
        if (!f.evidence.empty())
          out += "<p class=\"kv evidence\"><span class=\"k\">Evidence</span><span>" +
                 esc(f.evidence) + "</span></p>";
        out += "</li>";
      }
      out += "</ul>";
    }
    out += "</article>";
  }
  return out + "</div></section>";
}

}  // namespace

std::string render_html(const ReportData& d) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"" + std::string(kCsp) + "\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"nodus\">\n";
  out += "<title>" + esc(d.title) + "</title>\n<style>" + kPageStyle + "</style>\n</head>\n";
  out += "<body><main>" + header(d) + summary(d) + setup(d) + comparison(d);
  if (is_sweep(d) && !d.cells.empty()) out += bar_charts(d);
  if (!d.cells.empty()) out += utilization(d) + timelines(d) + diagnosis(d);
  out +=
      "<footer>Generated by nodus. One self-contained file: no scripts, no network "
      "requests.</footer></main></body></html>\n";
  return out;
}

}  // namespace nodus::report
