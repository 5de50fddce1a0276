#include "billing/prices_table.h"

#include <cstdio>

namespace nodus::billing {

std::string format_rate(double usd_per_gpu_hour) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", usd_per_gpu_hour);
  std::string text = buf;
  // Trailing zeros beyond the cents say nothing: "2.6000" -> "2.60".
  while (text.size() > text.find('.') + 3 && text.back() == '0') text.pop_back();
  return "$" + text;
}

Table prices_table(const Catalog& catalog) {
  Table table({{"type", "TYPE"},
               {"aliases", "ALIASES"},
               {"usd_per_gpu_hour", "$/GPU-HOUR", true},
               {"source", "SOURCE"},
               {"checked", "CHECKED"}});
  for (const auto& e : catalog.entries()) {
    std::string aliases;
    for (const auto& a : e.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
    table.add_row({e.type, aliases, format_rate(e.usd_per_gpu_hour), e.source, e.checked},
                  {{"type", e.type},
                   {"aliases", e.aliases},
                   {"usd_per_gpu_hour", e.usd_per_gpu_hour},
                   {"source", e.source},
                   {"checked", e.checked}});
  }
  return table;
}

}  // namespace nodus::billing
