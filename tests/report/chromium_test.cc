// The report in a real browser: Debian's headless Chromium loads the page from a file, and the
// tests read back the DOM it built, what it logged, and a screenshot. Skipped, with a message,
// only when Chromium is not installed (.ci/run installs it).

#include "chromium.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "mini_dom.h"
#include "report/report.h"
#include "report/series.h"
#include "sample_report.h"

namespace nodus::report {
namespace {

namespace fs = std::filesystem;
using testing::Document;

// Artifacts go beside the test executable, in the build directory, so CI can keep them.
fs::path artifact_dir() {
  const fs::path dir = fs::read_symlink("/proc/self/exe").parent_path() / "report-artifacts";
  fs::create_directories(dir);
  return dir;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

class ReportInChromium : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto found = testing::find_chromium();
    if (!found)
      GTEST_SKIP() << "chromium not found on PATH (nor $NODUS_CHROMIUM): install Debian's "
                      "`chromium` package to run the browser tests of the HTML report";
    chromium_ = *found;
    std::string templ = (fs::temp_directory_path() / "nodus-report-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Loads html in the browser with the given extra flags and console logging on.
  testing::BrowserRun load(const std::string& html, std::vector<std::string> flags) {
    const fs::path page = dir_ / ("page-" + std::to_string(++pages_) + ".html");
    write_file(page, html);
    flags.insert(flags.end(), {"--enable-logging=stderr", "--v=0"});
    testing::BrowserRun run = testing::run_chromium(chromium_, page, flags, dir_);
    EXPECT_FALSE(run.timed_out) << "chromium took longer than 60 s";
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run;
  }

  std::string chromium_;
  fs::path dir_;
  int pages_ = 0;
};

TEST_F(ReportInChromium, BrowserDomHasEveryBarAndPointWithoutConsoleErrors) {
  const ReportData data = testing::demo_sweep();
  const testing::BrowserRun run = load(render_html(data), {"--dump-dom"});
  EXPECT_EQ(joined(testing::page_console_lines(run.err)), "");

  const Document doc = testing::parse_html(run.out);
  size_t bar_charts = 0;
  for (int svg : doc.find("svg", "chart")) {
    if (doc.elements[svg].attr("data-chart").empty()) continue;
    ++bar_charts;
    EXPECT_EQ(doc.find_in(svg, "rect", "bar").size(), data.cells.size())
        << doc.elements[svg].attr("data-chart");
    EXPECT_EQ(doc.find_in(svg, "rect", "best").size(), 1u);
  }
  EXPECT_EQ(bar_charts, 3u);
  const std::vector<int> util_charts = doc.find("svg", "util-chart");
  ASSERT_EQ(util_charts.size(), data.cells.size());
  for (int svg : util_charts) {
    const size_t cell = std::stoul(doc.elements[svg].attr("data-cell"));
    ASSERT_LT(cell, data.cells.size());
    const auto lines = doc.find_in(svg, "polyline", "util");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(testing::count_points(doc.elements[lines[0]].attr("points")),
              thin_util_points(data.cells[cell].util, kMaxUtilPoints).size());
  }
}

TEST_F(ReportInChromium, HostileValuesStayTextInTheBrowser) {
  const testing::BrowserRun run = load(render_html(testing::hostile_sweep()), {"--dump-dom"});
  // An injected script would run (and log) or be blocked by the policy (and log a violation).
  EXPECT_EQ(joined(testing::page_console_lines(run.err)), "");

  const Document doc = testing::parse_html(run.out);
  ASSERT_GT(doc.elements.size(), 100u) << run.out.substr(0, 2000);
  for (const char* tag : {"script", "img", "a", "link", "iframe"})
    EXPECT_TRUE(doc.find(tag).empty()) << "the browser built a <" << tag << "> element";
  for (const auto& e : doc.elements)
    for (const auto& [name, value] : e.attrs)
      EXPECT_NE(name.rfind("on", 0), 0u) << "<" << e.tag << "> got attribute " << name;
  for (const auto& s : testing::hostile_strings())
    EXPECT_NE(doc.text.find(s), std::string::npos) << "not shown as text: " << s;
}

TEST_F(ReportInChromium, ScreenshotIsKeptInTheBuildDirectory) {
  const fs::path artifacts = artifact_dir();
  const fs::path png = artifacts / "demo-sweep.png";
  fs::remove(png);
  const std::string html = render_html(testing::demo_sweep());
  write_file(artifacts / "demo-sweep.html", html);
  const testing::BrowserRun run =
      load(html, {"--screenshot=" + png.string(), "--window-size=1280,2400", "--hide-scrollbars"});
  EXPECT_EQ(joined(testing::page_console_lines(run.err)), "");

  std::ifstream in(png, std::ios::binary);
  std::string header(24, '\0');
  ASSERT_TRUE(in.read(header.data(), 24)) << "no screenshot at " << png;
  EXPECT_EQ(header.substr(0, 8), "\x89PNG\r\n\x1a\n");
  const auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(header[at + i]);
    return v;
  };
  EXPECT_EQ(be32(16), 1280u);  // IHDR width
  EXPECT_EQ(be32(20), 2400u);  // IHDR height
  EXPECT_GT(fs::file_size(png), 50'000u) << "a page with charts does not compress this small";
  std::cout << "report screenshot: " << png.string() << "\n";
}

// The console check itself: a page whose inline script the policy blocks must be caught.
TEST_F(ReportInChromium, ConsoleCheckCatchesAScriptTheReportPolicyBlocks) {
  const std::string page =
      "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
      "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\"></head>"
      "<body><script>console.log('ran')</script></body></html>";
  const testing::BrowserRun run = load(page, {"--dump-dom"});
  const auto lines = testing::page_console_lines(run.err);
  ASSERT_FALSE(lines.empty()) << run.err;
  EXPECT_NE(joined(lines).find("Content Security Policy"), std::string::npos) << joined(lines);
}

}  // namespace
}  // namespace nodus::report
