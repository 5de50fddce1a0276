#include "mini_dom.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace nodus::report::testing {
namespace {

const std::set<std::string> kVoid = {"area",  "base", "br",   "col",    "embed", "hr", "img",
                                     "input", "link", "meta", "source", "track", "wbr"};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_name_char(char c) {
  return !std::isspace(static_cast<unsigned char>(c)) && c != '>' && c != '/' && c != '=' &&
         c != '"' && c != '\'';
}

}  // namespace

bool Element::has_class(const std::string& cls) const {
  std::istringstream words(attr("class"));
  std::string word;
  while (words >> word)
    if (word == cls) return true;
  return false;
}

std::string Element::attr(const std::string& name) const {
  const auto it = attrs.find(name);
  return it == attrs.end() ? "" : it->second;
}

bool Document::is_inside(int element, int ancestor) const {
  for (int p = elements[element].parent; p >= 0; p = elements[p].parent)
    if (p == ancestor) return true;
  return false;
}

std::vector<int> Document::find(const std::string& tag, const std::string& cls) const {
  return find_in(-1, tag, cls);
}

std::vector<int> Document::find_in(int within, const std::string& tag,
                                   const std::string& cls) const {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(elements.size()); ++i) {
    const Element& e = elements[i];
    if (!tag.empty() && e.tag != tag) continue;
    if (!cls.empty() && !e.has_class(cls)) continue;
    if (within >= 0 && !is_inside(i, within)) continue;
    out.push_back(i);
  }
  return out;
}

std::string decode_entities(const std::string& text) {
  static const std::map<std::string, std::string> kNamed = {
      {"lt", "<"}, {"gt", ">"}, {"amp", "&"}, {"quot", "\""}, {"apos", "'"}, {"nbsp", "\xC2\xA0"}};
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t semi = text.find(';', i);
    if (text[i] != '&' || semi == std::string::npos || semi - i > 10) {
      out += text[i];
      continue;
    }
    const std::string name = text.substr(i + 1, semi - i - 1);
    if (!name.empty() && name[0] == '#') {
      const bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
      const std::string digits = name.substr(hex ? 2 : 1);
      if (digits.empty() || digits.find_first_not_of(hex ? "0123456789abcdefABCDEF"
                                                         : "0123456789") != std::string::npos) {
        out += text[i];
        continue;
      }
      append_utf8(out, std::stoul(digits, nullptr, hex ? 16 : 10));
    } else if (kNamed.count(name)) {
      out += kNamed.at(name);
    } else {
      out += text[i];
      continue;
    }
    i = semi;
  }
  return out;
}

Document parse_html(const std::string& html) {
  Document doc;
  std::vector<int> open;  // stack of open elements
  size_t i = 0;
  while (i < html.size()) {
    if (html.compare(i, 4, "<!--") == 0) {
      const size_t end = html.find("-->", i + 4);
      i = end == std::string::npos ? html.size() : end + 3;
    } else if (html.compare(i, 2, "<!") == 0 || html.compare(i, 2, "<?") == 0) {
      const size_t end = html.find('>', i);
      i = end == std::string::npos ? html.size() : end + 1;
    } else if (html.compare(i, 2, "</") == 0) {
      size_t j = i + 2;
      while (j < html.size() && is_name_char(html[j])) ++j;
      const std::string tag = lower(html.substr(i + 2, j - i - 2));
      const auto it = std::find_if(open.rbegin(), open.rend(),
                                   [&](int e) { return doc.elements[e].tag == tag; });
      if (it != open.rend()) open.erase(std::next(it).base(), open.end());
      const size_t end = html.find('>', j);
      i = end == std::string::npos ? html.size() : end + 1;
    } else if (html[i] == '<' && i + 1 < html.size() &&
               std::isalpha(static_cast<unsigned char>(html[i + 1]))) {
      Element e;
      e.parent = open.empty() ? -1 : open.back();
      size_t j = i + 1;
      while (j < html.size() && is_name_char(html[j])) ++j;
      e.tag = lower(html.substr(i + 1, j - i - 1));
      bool self_closing = false;
      while (j < html.size() && html[j] != '>') {
        if (std::isspace(static_cast<unsigned char>(html[j]))) {
          ++j;
        } else if (html[j] == '/') {
          self_closing = true;
          ++j;
        } else {
          self_closing = false;
          size_t k = j;
          while (k < html.size() && is_name_char(html[k])) ++k;
          if (k == j) ++k;  // a stray quote or '=': skip it
          const std::string name = lower(html.substr(j, k - j));
          std::string value;
          while (k < html.size() && std::isspace(static_cast<unsigned char>(html[k]))) ++k;
          if (k < html.size() && html[k] == '=') {
            ++k;
            while (k < html.size() && std::isspace(static_cast<unsigned char>(html[k]))) ++k;
            if (k < html.size() && (html[k] == '"' || html[k] == '\'')) {
              const size_t close = html.find(html[k], k + 1);
              const size_t stop = close == std::string::npos ? html.size() : close;
              value = html.substr(k + 1, stop - k - 1);
              k = std::min(html.size(), stop + 1);
            } else {
              const size_t start = k;
              while (k < html.size() && !std::isspace(static_cast<unsigned char>(html[k])) &&
                     html[k] != '>')
                ++k;
              value = html.substr(start, k - start);
            }
          }
          e.attrs[name] = decode_entities(value);
          j = k;
        }
      }
      i = std::min(html.size(), j + 1);
      const int index = static_cast<int>(doc.elements.size());
      doc.elements.push_back(e);
      if (e.tag == "script" || e.tag == "style") {
        // Raw text: runs to the matching end tag, whatever it contains.
        const size_t end = lower(html).find("</" + e.tag, i);
        i = end == std::string::npos ? html.size() : end;
        open.push_back(index);
      } else if (!self_closing && !kVoid.count(e.tag)) {
        open.push_back(index);
      }
    } else {
      const size_t next = html.find('<', i + 1);
      const size_t end = next == std::string::npos ? html.size() : next;
      doc.text += decode_entities(html.substr(i, end - i));
      i = end;
    }
  }
  return doc;
}

size_t count_points(const std::string& points) {
  std::istringstream in(points);
  std::string pair;
  size_t n = 0;
  while (in >> pair) n += pair.find(',') != std::string::npos;
  return n;
}

}  // namespace nodus::report::testing
