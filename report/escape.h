#pragma once
// Escaping of user text for the places a report puts it. Every value in ReportData passes through
// one of these before it reaches the page; nothing a user types can open a tag, close an
// attribute or start a script.

#include <string>
#include <string_view>

namespace nodus::report {

// Text valid for both HTML text and double- or single-quoted attribute values: & < > " ' become
// entities; control characters other than tab and newline, and bytes that are not valid UTF-8,
// become U+FFFD, so the page stays valid UTF-8 whatever the store held.
std::string html_escape(std::string_view text);

// Text for Markdown prose and GitHub table cells, shown as typed: \ ` * _ [ ] < > # | ~ & are
// backslash-escaped (no emphasis, link, image, raw HTML, entity or extra table column), a leading
// list marker (- + =, "1. " "1) ") is escaped, and line breaks become spaces.
std::string markdown_escape(std::string_view text);

// A fenced code block holding text verbatim: the fence is one backtick longer than the longest
// run of backticks inside (at least three). Ends with a newline.
std::string markdown_code_block(std::string_view text, std::string_view language = "");

}  // namespace nodus::report
