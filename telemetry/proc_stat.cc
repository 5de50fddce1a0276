#include "telemetry/proc_stat.h"

#include <charconv>
#include <string>
#include <vector>

namespace nodus::telemetry {
namespace {

template <typename T>
bool to_number(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) state ppid pgrp session ..." where comm is anything up to 16 bytes, ')' and
  // spaces included: the last ')' ends it.
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  ProcStat st;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (!to_number(pid_text, &st.pid)) return std::nullopt;

  // Fields after comm, numbered as in proc(5): 3 = state ... 14 = utime, 15 = stime,
  // 22 = starttime, 24 = rss.
  std::vector<std::string_view> f;
  std::string_view rest = text.substr(close + 1);
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    size_t start = i;
    while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
    if (i > start) f.push_back(rest.substr(start, i - start));
  }
  auto field = [&](int n) { return f[static_cast<size_t>(n - 3)]; };
  if (f.size() < 22 || field(3).size() != 1) return std::nullopt;
  st.state = field(3)[0];
  if (!to_number(field(4), &st.ppid) || !to_number(field(5), &st.pgrp) ||
      !to_number(field(6), &st.session) || !to_number(field(14), &st.utime) ||
      !to_number(field(15), &st.stime) || !to_number(field(22), &st.starttime) ||
      !to_number(field(24), &st.rss_pages))
    return std::nullopt;
  return st;
}

}  // namespace nodus::telemetry
