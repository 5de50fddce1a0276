#pragma once
// Text from users and jobs as nodus stores and shows it: valid UTF-8 only, and control
// characters made visible so nothing a job or user typed can move the cursor, clear the screen
// or forge a line of a table.

#include <string>
#include <string_view>

namespace nodus {

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view text);

// `text` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD.
std::string replace_invalid_utf8(std::string_view text);

// Valid UTF-8 with C0 controls, DEL and C1 controls written as escapes: "\n", "\t", "\r",
// "\x1b", "\u009b"; a backslash stays a backslash. For table cells and terminal lines.
std::string escape_control(std::string_view text);

// Columns `text` takes on a terminal: 2 for East Asian wide and fullwidth characters and most
// emoji, 0 for combining marks and zero-width or bidi format characters, 1 for the rest (each
// invalid byte too). A small table of its own: glibc's wcwidth needs the process's locale set,
// which a library must not change.
size_t display_width(std::string_view text);

// The first problem that makes `text` unfit for a name or parameter value, or "" when fine:
// "not valid UTF-8" or "contains a control character".
std::string text_problem(std::string_view text);

}  // namespace nodus
