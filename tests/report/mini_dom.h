#pragma once
// A small HTML/SVG tree reader for the tests: enough to find elements by tag, class and
// attribute in nodus's own output and in the DOM that Chromium serializes (--dump-dom), so both
// are checked by the same counting code. Not a full HTML5 parser: it knows void elements, raw
// text in <script>/<style>, comments, quoted and unquoted attributes and character references.

#include <map>
#include <string>
#include <vector>

namespace nodus::report::testing {

struct Element {
  std::string tag;                           // lower case
  std::map<std::string, std::string> attrs;  // names lower case, values decoded
  int parent = -1;                           // index in Document::elements, -1 for top level
  bool has_class(const std::string& cls) const;
  std::string attr(const std::string& name) const;  // "" when absent
};

struct Document {
  std::vector<Element> elements;  // in document order
  std::string text;               // all decoded text outside <script>/<style>, concatenated

  bool is_inside(int element, int ancestor) const;
  // Indices of elements with this tag (any tag if empty) and class (any if empty).
  std::vector<int> find(const std::string& tag, const std::string& cls = "") const;
  // The same, limited to descendants of `within`.
  std::vector<int> find_in(int within, const std::string& tag, const std::string& cls = "") const;
};

Document parse_html(const std::string& html);

// "&lt;b&gt; &amp; &#39; &#x41;" -> "<b> & ' A".
std::string decode_entities(const std::string& text);

// Points of an SVG points attribute: "1,2 3,4" -> 2.
size_t count_points(const std::string& points);

}  // namespace nodus::report::testing
