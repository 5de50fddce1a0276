#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "report/report.h"
#include "sample_report.h"

namespace nodus::report {
namespace {

const std::string kGolden = std::string(NODUS_TEST_DATA) + "/report/demo-sweep.md";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_starting_with(const std::string& text, char c) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == c) out.push_back(line);
  return out;
}

// Column separators of a GitHub table row: pipes not escaped by a backslash.
size_t unescaped_pipes(const std::string& row) {
  size_t n = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\') {
      ++i;
      continue;
    }
    n += row[i] == '|';
  }
  return n;
}

// NODUS_UPDATE_GOLDEN=1 rewrites the golden file from the renderer; review the diff before
// committing.
TEST(MarkdownReport, MatchesTheGoldenFile) {
  const std::string md = render_markdown(testing::demo_sweep());
  if (std::getenv("NODUS_UPDATE_GOLDEN")) std::ofstream(kGolden) << md;
  EXPECT_EQ(md, read_file(kGolden)) << "golden: " << kGolden;
}

TEST(MarkdownReport, HasTheTableSummaryAndDiagnosisButNoImagesOrHtml) {
  const std::string md = render_markdown(testing::demo_sweep());
  const auto rows = lines_starting_with(md, '|');
  EXPECT_EQ(rows.size(), 2u + 5u);  // header, alignment, one row per cell
  EXPECT_NE(md.find("num\\_workers=14 is 8.1x faster"), std::string::npos);
  EXPECT_NE(md.find("| **14** (best) |"), std::string::npos);
  EXPECT_NE(md.find("### num\\_workers=0\n"), std::string::npos);
  EXPECT_EQ(md.find("!["), std::string::npos);
  EXPECT_EQ(md.find('<'), std::string::npos);
}

TEST(MarkdownReport, MfuIsAColumnOnlyWhereCountedAndALineOfAJob) {
  ReportData data = testing::demo_sweep();
  EXPECT_EQ(render_markdown(data).find("MFU"), std::string::npos);
  data.cells[0].mfu = 0.25;
  const std::string md = render_markdown(data);
  EXPECT_NE(md.find("| MFU |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 25% |"), std::string::npos) << md;
  data.kind = ReportKind::kJob;
  data.grid.clear();
  data.cells = {data.cells[0]};
  data.cells[0].unused_usd_per_hour = 3.5;
  EXPECT_NE(render_markdown(data).find("- **MFU:** 25%, $3.50/h of arithmetic paid for and "
                                       "unused"),
            std::string::npos)
      << render_markdown(data);
}

TEST(MarkdownReport, HostileValuesCannotAddColumnsOrMarkup) {
  const std::string md = render_markdown(testing::hostile_sweep());
  const auto rows = lines_starting_with(md, '|');
  ASSERT_EQ(rows.size(), 7u);
  for (const auto& row : rows) EXPECT_EQ(unescaped_pipes(row), unescaped_pipes(rows[0])) << row;
  // Outside the fenced command, every '<' is escaped.
  const size_t fence_end = md.find("```\n", md.find("```sh\n") + 6);
  ASSERT_NE(fence_end, std::string::npos);
  const std::string prose = md.substr(0, md.find("```sh\n")) + md.substr(fence_end);
  for (size_t i = prose.find('<'); i != std::string::npos; i = prose.find('<', i + 1))
    EXPECT_EQ(prose[i - 1], '\\') << prose.substr(i, 30);
  // The command keeps the hostile words verbatim, inside the code block.
  EXPECT_NE(md.find("'</script><script>alert(1)</script>'"), std::string::npos);
}

}  // namespace
}  // namespace nodus::report
