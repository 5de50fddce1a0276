#include "report/escape.h"

#include <gtest/gtest.h>

#include "sample_report.h"

namespace nodus::report {
namespace {

TEST(HtmlEscape, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(HtmlEscape, LeavesPlainTextAndUtf8Alone) {
  EXPECT_EQ(html_escape("num_workers=14 \xC3\x97 H200 \xE2\x80\x94 ok"),
            "num_workers=14 \xC3\x97 H200 \xE2\x80\x94 ok");
}

TEST(HtmlEscape, HostileStringsLoseEveryMarkupCharacter) {
  for (const auto& s : testing::hostile_strings()) {
    const std::string e = html_escape(s);
    EXPECT_EQ(e.find_first_of("<>\"'"), std::string::npos) << e;
  }
  EXPECT_EQ(html_escape("</script><script>alert(1)</script>"),
            "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
}

TEST(HtmlEscape, ReplacesControlCharactersAndInvalidUtf8) {
  EXPECT_EQ(html_escape(std::string("a\0b", 3)),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(html_escape("tab\tnew\nline\r"), "tab\tnew\nline\xEF\xBF\xBD");
  EXPECT_EQ(html_escape("\xFF"), "\xEF\xBF\xBD");
  EXPECT_EQ(html_escape("\xC3"), "\xEF\xBF\xBD");                  // truncated sequence
  EXPECT_EQ(html_escape("\xC0\xBC"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '<'
  EXPECT_EQ(html_escape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(html_escape("\xF0\x9F\x9A\x80"), "\xF0\x9F\x9A\x80");  // a valid 4-byte character
}

TEST(MarkdownEscape, EscapesCharactersWithMarkdownMeaning) {
  EXPECT_EQ(markdown_escape("num_workers"), "num\\_workers");
  EXPECT_EQ(markdown_escape("a|b"), "a\\|b");
  EXPECT_EQ(markdown_escape("<img src=x>"), "\\<img src=x\\>");
  EXPECT_EQ(markdown_escape("[x](javascript:y)"), "\\[x\\](javascript:y)");
  EXPECT_EQ(markdown_escape("`code` *b* ~s~ &lt; \\"), "\\`code\\` \\*b\\* \\~s\\~ \\&lt; \\\\");
  EXPECT_EQ(markdown_escape("# title"), "\\# title");
}

TEST(MarkdownEscape, EscapesALeadingListMarkerAndJoinsLines) {
  EXPECT_EQ(markdown_escape("- item"), "\\- item");
  EXPECT_EQ(markdown_escape("12. item"), "12\\. item");
  EXPECT_EQ(markdown_escape("3) item"), "3\\) item");
  EXPECT_EQ(markdown_escape("3.5 GB"), "3.5 GB");
  EXPECT_EQ(markdown_escape("a-b 12"), "a-b 12");
  EXPECT_EQ(markdown_escape("two\nlines"), "two lines");
}

TEST(MarkdownCodeBlock, FenceIsLongerThanAnyBacktickRunInside) {
  EXPECT_EQ(markdown_code_block("python train.py", "sh"), "```sh\npython train.py\n```\n");
  EXPECT_EQ(markdown_code_block("echo ````x````"), "`````\necho ````x````\n`````\n");
}

}  // namespace
}  // namespace nodus::report
