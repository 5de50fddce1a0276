#include "billing/json_lines.h"

#include <algorithm>

namespace nodus::billing {
namespace {

// A recursive walk over valid JSON that only tracks where things are, not what they mean.
class Walker {
 public:
  Walker(std::string_view text, std::unordered_map<std::string, int>& lines)
      : text_(text), lines_(lines) {}

  void value(const std::string& pointer) {
    skip_space();
    if (pos_ >= text_.size()) return;
    lines_.emplace(pointer, line_);  // a member's key line, recorded first, is kept
    switch (text_[pos_]) {
      case '{':
        object(pointer);
        break;
      case '[':
        array(pointer);
        break;
      case '"':
        string();
        break;
      default:
        scalar();
        break;
    }
  }

 private:
  void object(const std::string& pointer) {
    ++pos_;
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    while (pos_ < text_.size()) {
      skip_space();
      int key_line = line_;
      std::string child = pointer + "/" + pointer_token(string());
      lines_.emplace(child, key_line);
      skip_space();
      ++pos_;  // ':'
      value(child);
      skip_space();
      char c = peek();
      ++pos_;  // ',' or '}'
      if (c != ',') return;
    }
  }

  void array(const std::string& pointer) {
    ++pos_;
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (size_t index = 0; pos_ < text_.size(); ++index) {
      value(pointer + "/" + std::to_string(index));
      skip_space();
      char c = peek();
      ++pos_;  // ',' or ']'
      if (c != ',') return;
    }
  }

  // Returns the string's contents with escapes reduced to the escaped character: close enough for
  // member names, which is all this is used for.
  std::string string() {
    std::string out;
    ++pos_;  // opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    ++pos_;  // closing quote
    return out;
  }

  void scalar() {
    while (pos_ < text_.size() &&
           std::string_view(",]} \t\r\n").find(text_[pos_]) == std::string_view::npos)
      ++pos_;
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  std::string_view text_;
  std::unordered_map<std::string, int>& lines_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

JsonLines::JsonLines(std::string_view text) { Walker(text, lines_).value(""); }

int JsonLines::line_of(std::string pointer) const {
  while (true) {
    if (auto it = lines_.find(pointer); it != lines_.end()) return it->second;
    if (pointer.empty()) return 1;
    pointer.erase(pointer.rfind('/'));
  }
}

int line_at(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

std::string pointer_token(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

}  // namespace nodus::billing
