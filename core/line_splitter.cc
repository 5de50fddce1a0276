#include "core/line_splitter.h"

#include <algorithm>

namespace nodus {

void LineSplitter::feed(std::string_view data, const LineFn& on_line) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    size_t room = max_line_ - partial_.size();
    if (nl != std::string_view::npos && nl <= room) {
      partial_.append(data.substr(0, nl));
      if (on_line) on_line(partial_);
      partial_.clear();
      data.remove_prefix(nl + 1);
      continue;
    }
    size_t take = std::min(room, data.size());
    partial_.append(data.substr(0, take));
    data.remove_prefix(take);
    if (partial_.size() >= max_line_) {
      if (on_line) on_line(partial_);
      partial_.clear();
    }
  }
}

void LineSplitter::finish(const LineFn& on_line) {
  if (!partial_.empty() && on_line) on_line(partial_);
  partial_.clear();
}

}  // namespace nodus
