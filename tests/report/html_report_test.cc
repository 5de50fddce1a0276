#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <regex>

#include "mini_dom.h"
#include "report/report.h"
#include "report/series.h"
#include "sample_report.h"

namespace nodus::report {
namespace {

using testing::Document;
using testing::parse_html;

const char* const kBarCharts[] = {"throughput", "cost", "usd-per-million"};

// The one <svg> whose attribute `name` is `value`; fails the test if there is not exactly one.
int chart(const Document& doc, const std::string& name, const std::string& value) {
  std::vector<int> found;
  for (int i : doc.find("svg", "chart"))
    if (doc.elements[i].attr(name) == value) found.push_back(i);
  EXPECT_EQ(found.size(), 1u) << name << "=" << value;
  return found.empty() ? -1 : found.front();
}

size_t expected_points(const Cell& c) { return thin_util_points(c.util, kMaxUtilPoints).size(); }

TEST(HtmlReport, EachBarChartHasOneBarPerCellAndMarksTheBestCell) {
  const ReportData data = testing::demo_sweep();
  const Document doc = parse_html(render_html(data));
  for (const char* id : kBarCharts) {
    const int svg = chart(doc, "data-chart", id);
    ASSERT_GE(svg, 0);
    const std::vector<int> bars = doc.find_in(svg, "rect", "bar");
    ASSERT_EQ(bars.size(), data.cells.size()) << id;
    for (size_t i = 0; i < bars.size(); ++i)
      EXPECT_EQ(doc.elements[bars[i]].has_class("best"), data.cells[i].best) << id << " bar " << i;
  }
}

TEST(HtmlReport, EachCellHasAUtilizationLineWithOnePointPerSample) {
  const ReportData data = testing::demo_sweep();
  const Document doc = parse_html(render_html(data));
  EXPECT_EQ(doc.find("svg", "util-chart").size(), data.cells.size());
  for (size_t i = 0; i < data.cells.size(); ++i) {
    const int svg = chart(doc, "data-cell", std::to_string(i));
    ASSERT_GE(svg, 0);
    const std::vector<int> lines = doc.find_in(svg, "polyline", "util");
    ASSERT_EQ(lines.size(), 1u);
    const size_t points = testing::count_points(doc.elements[lines[0]].attr("points"));
    EXPECT_EQ(points, expected_points(data.cells[i])) << "cell " << i;
    EXPECT_LE(points, kMaxUtilPoints);
    if (data.cells[i].util.size() <= kMaxUtilPoints) {
      EXPECT_EQ(points, data.cells[i].util.size());
    }
    // Every demo cell idles while it starts and while it waits for batches.
    EXPECT_GE(doc.find_in(svg, "rect", "idle").size(), 1u) << "cell " << i;
  }
  // num_workers=0 ran long enough (1 Hz samples) to be thinned to the envelope.
  EXPECT_GT(data.cells[0].util.size(), kMaxUtilPoints);
}

TEST(HtmlReport, ComparisonTableHasOneRowPerCellAndOneBestRow) {
  const ReportData data = testing::demo_sweep();
  const Document doc = parse_html(render_html(data));
  const std::vector<int> tables = doc.find("table", "comparison");
  ASSERT_EQ(tables.size(), 1u);
  const std::vector<int> body = doc.find_in(tables[0], "tbody");
  ASSERT_EQ(body.size(), 1u);
  EXPECT_EQ(doc.find_in(body[0], "tr").size(), data.cells.size());
  EXPECT_EQ(doc.find_in(body[0], "tr", "best").size(), 1u);
}

TEST(HtmlReport, ShowsTheSetupAxesWithUnitsAndTheDiagnosis) {
  const Document doc = parse_html(render_html(testing::demo_sweep()));
  for (const char* expected :
       {"python train.py --arch resnet18 --batch-size 256 --num-workers {num_workers} --amp bf16",
        "num_workers = 0, 2, 4, 8, 14", "1 \xC3\x97 H200 per cell", "$4.54 per GPU-hour",
        "2026-11-12 15:23 UTC", "local", "samples/s (higher is better)",
        "cost per cell, USD (lower is better)", "USD per million samples (lower is better)",
        "GPU util (%)", "time since start (min)", "time since start (s)",
        "DataLoader loads every batch in the main process (num_workers=0)",
        "num_workers=14 is 8.1x faster", "8,400", "$0.15"})
    EXPECT_NE(doc.text.find(expected), std::string::npos) << expected;
  EXPECT_EQ(doc.find("article", "diagnosis").size(), 5u);
}

TEST(HtmlReport, HasNoExternalReferences) {
  const std::string html = render_html(testing::demo_sweep());
  const std::regex external(
      R"((<script|<link|<iframe|<object|<embed|<img|@import|https?:|src=|href=|url\((?!#)))",
      std::regex::icase);
  std::smatch m;
  EXPECT_FALSE(std::regex_search(html, m, external)) << m.str();
}

TEST(HtmlReport, HasNoScriptsEventHandlersOrLinksEvenWithHostileValues) {
  for (const ReportData& data : {testing::demo_sweep(), testing::hostile_sweep()}) {
    const Document doc = parse_html(render_html(data));
    for (const auto& e : doc.elements) {
      EXPECT_NE(e.tag, "script");
      for (const auto& [name, value] : e.attrs) {
        EXPECT_NE(name.rfind("on", 0), 0u) << e.tag << " " << name;
        EXPECT_NE(name, "src");
        EXPECT_NE(name, "href");
        EXPECT_NE(name, "style");
        // Attribute values are ours: the only url() is a pattern in the same chart.
        if (value.find("url(") != std::string::npos) {
          EXPECT_EQ(value.rfind("url(#", 0), 0u) << value;
        }
      }
    }
  }
}

TEST(HtmlReport, ContentSecurityPolicyForbidsScripts) {
  const Document doc = parse_html(render_html(testing::demo_sweep()));
  size_t csp = 0;
  for (int i : doc.find("meta")) {
    if (doc.elements[i].attr("http-equiv") != "Content-Security-Policy") continue;
    ++csp;
    EXPECT_EQ(doc.elements[i].attr("content"),
              "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
  }
  EXPECT_EQ(csp, 1u);
}

TEST(HtmlReport, HostileValuesAppearOnlyAsText) {
  const ReportData data = testing::hostile_sweep();
  const std::string html = render_html(data);
  for (const auto& s : testing::hostile_strings()) EXPECT_EQ(html.find(s), std::string::npos) << s;

  const Document doc = parse_html(html);
  for (const auto& s : testing::hostile_strings())
    EXPECT_NE(doc.text.find(s), std::string::npos) << "missing as text: " << s;
  for (const char* tag : {"script", "img", "a", "link", "iframe"})
    EXPECT_TRUE(doc.find(tag).empty()) << tag;
  // The page keeps its shape: nothing the user typed opened or closed an element.
  const Document clean = parse_html(render_html(testing::demo_sweep()));
  EXPECT_EQ(doc.elements.size(), clean.elements.size());
  EXPECT_EQ(doc.find("title").size(), clean.find("title").size());
  for (const char* id : kBarCharts) {
    const int svg = chart(doc, "data-chart", id);
    ASSERT_GE(svg, 0);
    EXPECT_EQ(doc.find_in(svg, "rect", "bar").size(), data.cells.size());
  }
}

TEST(HtmlReport, CellWithoutAValueHasNoBarAndIsNamedUnderTheChart) {
  ReportData data = testing::demo_sweep();
  data.cells[1].status = "failed";
  data.cells[1].throughput.reset();
  data.cells[1].usd_per_million.reset();
  data.cells[2].util.clear();
  data.cells[3].status = "running";  // a sweep still in progress: not marked as trouble
  const Document doc = parse_html(render_html(data));
  EXPECT_EQ(doc.find_in(chart(doc, "data-chart", "throughput"), "rect", "bar").size(), 4u);
  EXPECT_EQ(doc.find_in(chart(doc, "data-chart", "usd-per-million"), "rect", "bar").size(), 4u);
  EXPECT_EQ(doc.find_in(chart(doc, "data-chart", "cost"), "rect", "bar").size(), 5u);
  EXPECT_NE(doc.text.find("No value for num_workers=2."), std::string::npos);
  EXPECT_EQ(doc.find("svg", "util-chart").size(), 4u);
  EXPECT_NE(doc.text.find("No GPU samples."), std::string::npos);
  EXPECT_EQ(doc.find("td", "status-bad").size(), 1u);
}

TEST(HtmlReport, JobReportHasAUtilizationChartButNoBarCharts) {
  ReportData data = testing::demo_sweep();
  data.kind = ReportKind::kJob;
  data.title = "Job 41";
  data.grid.clear();
  data.cells = {data.cells.back()};
  const Document doc = parse_html(render_html(data));
  size_t bar_charts = 0;
  for (int i : doc.find("svg", "chart")) bar_charts += !doc.elements[i].attr("data-chart").empty();
  EXPECT_EQ(bar_charts, 0u);
  EXPECT_EQ(doc.find("svg", "util-chart").size(), 1u);
  EXPECT_NE(doc.text.find("nodus job report"), std::string::npos);
  EXPECT_EQ(doc.text.find("Grid"), std::string::npos);
}

// MFU where FLOPs were counted: a column in the comparison (only then), and in a job's summary
// beside its idle dollars, with the hourly arithmetic it leaves unused.
TEST(HtmlReport, MfuIsAColumnWhereCountedAndAFigureOfAJob) {
  ReportData data = testing::demo_sweep();
  std::string html = render_html(data);
  EXPECT_EQ(html.find(">MFU<"), std::string::npos);
  data.cells[1].mfu = 0.314;
  Document doc = parse_html(render_html(data));
  EXPECT_NE(doc.text.find("MFU"), std::string::npos);
  EXPECT_NE(doc.text.find("31.4%"), std::string::npos) << doc.text;
  for (int row : doc.find("tr")) {
    if (doc.find_in(row, "td").empty()) continue;
    EXPECT_EQ(doc.find_in(row, "td").size(), doc.find("th").size()) << "row " << row;
  }

  data.kind = ReportKind::kJob;
  data.grid.clear();
  data.cells = {data.cells[1]};
  data.cells[0].unused_usd_per_hour = 3.11;
  doc = parse_html(render_html(data));
  EXPECT_NE(doc.text.find("$3.11/h of arithmetic paid for and unused"), std::string::npos)
      << doc.text;
}

TEST(HtmlReport, OddNumbersStillDrawEveryChart) {
  ReportData data = testing::demo_sweep();
  data.cells[0].util = {{0, 50}};  // one sample, no wall time
  data.cells[0].wall_s = 0;
  data.cells[1].util[3].util = std::numeric_limits<double>::quiet_NaN();
  data.cells[2].throughput = std::numeric_limits<double>::infinity();
  const Document doc = parse_html(render_html(data));
  for (const auto& e : doc.elements)
    for (const char* attr : {"x", "y", "width", "height", "points", "x1", "x2", "y1", "y2"})
      EXPECT_EQ(e.attr(attr).find_first_of("ainf"), std::string::npos) << e.tag << " " << attr;
  EXPECT_EQ(doc.find("svg", "util-chart").size(), 5u);
  EXPECT_EQ(doc.find_in(chart(doc, "data-chart", "throughput"), "rect", "bar").size(), 4u);
  const auto first = doc.find_in(chart(doc, "data-cell", "0"), "polyline", "util");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(testing::count_points(doc.elements[first[0]].attr("points")), 1u);
}

TEST(HtmlReport, LongRunsThinTheLineButShadeEveryIdleStretch) {
  ReportData data = testing::demo_sweep();
  Cell& c = data.cells[0];
  c.util.clear();
  for (int t = 0; t < 20000; ++t) c.util.push_back({double(t), t % 1000 < 200 ? 1.0 : 95.0});
  c.wall_s = 20000;
  const Document doc = parse_html(render_html(data));
  const int svg = chart(doc, "data-cell", "0");
  ASSERT_GE(svg, 0);
  const auto lines = doc.find_in(svg, "polyline", "util");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LE(testing::count_points(doc.elements[lines[0]].attr("points")), kMaxUtilPoints);
  EXPECT_EQ(doc.find_in(svg, "rect", "idle").size(), 20u);  // one per 1000 s period
  EXPECT_NE(doc.text.find("time since start (h)"), std::string::npos);
}

TEST(HtmlReport, AProfiledCellGetsAStepTimelineWithGapsAndSyncsMarked) {
  ReportData data = testing::demo_sweep();
  StepTimeline t;
  t.step_ms = 10;
  t.cpu = {{0, 2}, {3, 9}};
  t.gpu = {{1, 4}, {6, 8}};  // idle 0-1 (fetching), 4-6 (after the sync), 8-10
  t.fetch = {{0, 1}};
  t.syncs = {{4, "aten::item <script>"}};
  t.caption = "step 10 ms";
  data.cells[1].timeline = t;
  const std::string html = render_html(data);
  const Document doc = parse_html(html);
  std::vector<int> timelines;
  for (int i : doc.find("svg", "step-timeline")) timelines.push_back(i);
  ASSERT_EQ(timelines.size(), 1u);
  EXPECT_EQ(doc.elements[timelines[0]].attr("data-cell"), "1");
  EXPECT_EQ(doc.find_in(timelines[0], "rect", "cpu").size(), 2u);
  EXPECT_EQ(doc.find_in(timelines[0], "rect", "gpu").size(), 2u);
  EXPECT_EQ(doc.find_in(timelines[0], "rect", "fetch").size(), 1u);
  EXPECT_EQ(doc.find_in(timelines[0], "rect", "gap").size(), 3u);  // fetch, after sync, tail
  EXPECT_EQ(doc.find_in(timelines[0], "line", "sync").size(), 1u);
  EXPECT_EQ(html.find("<script>"), std::string::npos);  // the sync's name is text
  // Cells without a profile draw none; a report without any has no section.
  EXPECT_EQ(render_html(testing::demo_sweep()).find("class=\"chart step-timeline\""),
            std::string::npos);
}

}  // namespace
}  // namespace nodus::report
