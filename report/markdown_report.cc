// render_markdown: the report as text to paste into a pull request or a chat. Every user string
// passes through markdown_escape (or a fenced code block), so it shows as typed.

#include <string>
#include <vector>

#include "core/parse.h"
#include "core/strings.h"
#include "report/escape.h"
#include "report/format.h"
#include "report/report.h"

namespace nodus::report {
namespace {

std::string md(const std::string& s) { return markdown_escape(s); }

const char* const kMissing = "\xE2\x80\x94";  // an em dash

std::string setup(const ReportData& d) {
  const bool sweep = d.kind == ReportKind::kSweep;
  std::string out;
  for (const auto& axis : d.grid)
    out += "- **Grid:** " + md(axis.name) + " = " + md(join(axis.values, ", ")) + "\n";
  out += "- **GPU:** " + md(gpu_text(d.gpu_type, d.gpu_count)) + (sweep ? " per cell" : "") +
         " at " + md(format_usd(d.rate_per_gpu_hour)) + " per GPU-hour\n";
  if (!d.backend.empty()) out += "- **Backend:** " + md(d.backend) + "\n";
  const std::string date = format_date_utc(d.created_at);
  if (!date.empty()) out += "- **Date:** " + md(date) + "\n";
  std::string total = format_usd(d.totals.cost_usd) + " over " + format_seconds(d.totals.wall_s);
  if (sweep) total += ", " + std::to_string(d.cells.size()) + " cells";
  if (d.totals.idle_usd) total += ", " + format_usd(*d.totals.idle_usd) + " of it on idle GPU time";
  out += "- **Total:** " + md(total) + "\n";
  if (!sweep && !d.cells.empty() && d.cells.front().mfu) {
    const Cell& c = d.cells.front();
    std::string mfu = format_percent(*c.mfu * 100);
    if (c.unused_usd_per_hour)
      mfu += ", " + format_usd(*c.unused_usd_per_hour) + "/h of arithmetic paid for and unused";
    out += "- **MFU:** " + md(mfu) + "\n";
  }
  return out;
}

std::vector<std::string> param_names(const ReportData& d) {
  std::vector<std::string> names;
  for (const auto& c : d.cells)
    for (const auto& p : c.params) {
      bool seen = false;
      for (const auto& n : names) seen = seen || n == p.first;
      if (!seen) names.push_back(p.first);
    }
  return names;
}

std::string optional_text(const std::optional<double>& v, std::string (*fmt)(double)) {
  return v ? fmt(*v) : kMissing;
}
std::string usd(double v) { return format_usd(v); }
std::string percent(double v) { return format_percent(v); }
std::string fraction(double v) { return format_percent(v * 100); }

// The comparison as a GitHub table; the best row is bold and tagged "(best)".
std::string comparison(const ReportData& d) {
  const std::vector<std::string> params = param_names(d);
  bool mfu = false;  // the MFU column only where some cell's FLOPs were counted
  for (const auto& c : d.cells) mfu = mfu || c.mfu;
  std::vector<std::pair<std::string, bool>> columns;  // header, right-aligned
  if (params.empty()) columns.push_back({"cell", false});
  for (const auto& p : params) columns.push_back({p, false});
  for (const auto& [h, right] :
       std::vector<std::pair<std::string, bool>>{{"status", false},
                                                 {"wall", true},
                                                 {"cost", true},
                                                 {d.throughput_unit, true},
                                                 {"$/M " + work_items(d.throughput_unit), true},
                                                 {"data wait", true},
                                                 {"GPU util", true},
                                                 {"MFU", true},
                                                 {"idle $", true},
                                                 {"verdict", false}})
    if (h != "MFU" || mfu) columns.push_back({h, right});

  std::string out = "|";
  for (const auto& [h, right] : columns) out += " " + md(h) + " |";
  out += "\n|";
  for (const auto& [h, right] : columns) out += right ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& c : d.cells) {
    std::vector<std::string> row;
    if (params.empty()) row.push_back(c.label);
    for (const auto& p : params) {
      std::string value;
      for (const auto& [n, v] : c.params)
        if (n == p) value = v;
      row.push_back(value);
    }
    row.insert(row.end(),
               {c.status, format_seconds(c.wall_s), format_usd(c.cost_usd),
                optional_text(c.throughput, format_number), optional_text(c.usd_per_million, usd),
                optional_text(c.data_wait, fraction), optional_text(c.util_mean, percent)});
    if (mfu) row.push_back(optional_text(c.mfu, fraction));
    row.insert(row.end(), {optional_text(c.idle_usd, usd), c.verdict});
    out += "|";
    for (size_t i = 0; i < row.size(); ++i) {
      std::string text = md(row[i]);
      if (c.best && !text.empty()) text = "**" + text + "**";
      if (c.best && i == 0) text += " (best)";
      out += " " + text + " |";
    }
    out += "\n";
  }
  return out;
}

std::string diagnosis(const ReportData& d) {
  std::string out;
  for (const auto& c : d.cells) {
    out += "\n### " + md(c.label) + (c.best ? " (best)" : "") + "\n\n";
    if (!c.verdict.empty()) out += "Verdict: " + md(c.verdict) + "\n\n";
    if (c.diagnosis.empty()) {
      out += "Nothing to fix found in this cell's numbers.\n";
      continue;
    }
    for (const auto& f : c.diagnosis) {
      out += "- **" + md(f.cause) + "**\n";
      if (!f.fix.empty()) out += "  - Fix: " + md(f.fix) + "\n";
      if (!f.evidence.empty()) out += "  - Evidence: " + md(f.evidence) + "\n";
    }
  }
  return out;
}

}  // namespace

std::string render_markdown(const ReportData& d) {
  std::string out = "# " + md(d.title) + "\n\n";
  if (!d.summary.empty()) out += md(d.summary) + "\n\n";
  out += markdown_code_block(shell_join(d.command), "sh") + "\n";
  out += setup(d) + "\n## Comparison\n\n" + comparison(d);
  if (!d.cells.empty()) out += "\n## Diagnosis\n" + diagnosis(d);
  return out;
}

}  // namespace nodus::report
