#include "report/escape.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace nodus::report {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

constexpr std::pair<char, std::string_view> kEntities[] = {
    {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};

// Length of the valid UTF-8 sequence starting at s[i], or 0 if the bytes there are not one
// (stray continuation bytes, overlong forms, surrogates, code points past U+10FFFF).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return len;
}

// Calls out(piece) for each piece of text: valid characters as they are, U+FFFD for control
// characters and invalid bytes. Characters are passed one at a time so callers can map them.
template <typename Out>
void for_each_char(std::string_view text, Out out) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_sequence_length(text, i);
    if (len == 0) {
      out(kReplacement);
      ++i;
      continue;
    }
    const auto c = static_cast<uint8_t>(text[i]);
    const bool control = (len == 1 && ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F));
    out(control ? kReplacement : text.substr(i, len));
    i += len;
  }
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for_each_char(text, [&](std::string_view ch) {
    for (const auto& [c, entity] : kEntities) {
      if (ch.size() == 1 && ch[0] == c) {
        out += entity;
        return;
      }
    }
    out += ch;
  });
  return out;
}

std::string markdown_escape(std::string_view text) {
  constexpr std::string_view kSpecial = "\\`*_[]<>#|~&";
  std::string out;
  for_each_char(text, [&](std::string_view ch) {
    if (ch == "\n" || ch == "\t") {
      out += ' ';
      return;
    }
    if (ch.size() == 1 && kSpecial.find(ch[0]) != std::string_view::npos) out += '\\';
    out += ch;
  });
  // A value that starts a line must not become a list item or a setext underline.
  if (!out.empty() && (out[0] == '-' || out[0] == '+' || out[0] == '=')) {
    out.insert(out.begin(), '\\');
  } else {
    const size_t digits = out.find_first_not_of("0123456789");
    const bool marker = digits > 0 && digits != std::string::npos &&
                        (out[digits] == '.' || out[digits] == ')') &&
                        (digits + 1 == out.size() || out[digits + 1] == ' ');
    if (marker) out.insert(digits, "\\");
  }
  return out;
}

std::string markdown_code_block(std::string_view text, std::string_view language) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = (c == '`') ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = fence + std::string(language) + "\n";
  for_each_char(text, [&](std::string_view ch) { out += ch; });
  if (out.back() != '\n') out += '\n';
  return out + fence + "\n";
}

}  // namespace nodus::report
