#include "billing/prices_table.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/table_fields.h"

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
  // The ORIGIN column shows only when a user catalog is merged in: then each row says where
  // its price comes from.
  const bool merged = std::any_of(catalog.entries().begin(), catalog.entries().end(),
                                  [&](const PriceEntry& e) { return e.origin != "built-in"; }) &&
                      std::any_of(catalog.entries().begin(), catalog.entries().end(),
                                  [&](const PriceEntry& e) { return e.origin == "built-in"; });
  using F = Field<PriceEntry>;
  const std::vector<F> fields = {
      {{"type", "TYPE"},
       [](const PriceEntry& e) { return e.type; },
       [](const PriceEntry& e) { return nlohmann::json(e.type); }},
      {{"aliases", "ALIASES"},
       [](const PriceEntry& e) {
         std::string aliases;
         for (const auto& a : e.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
         return aliases;
       },
       [](const PriceEntry& e) { return nlohmann::json(e.aliases); }},
      {{"usd_per_gpu_hour", "$/GPU-HOUR", true},
       [](const PriceEntry& e) { return format_rate(e.usd_per_gpu_hour); },
       [](const PriceEntry& e) { return nlohmann::json(e.usd_per_gpu_hour); }},
      {{"source", "SOURCE"},
       [](const PriceEntry& e) { return e.source.empty() ? std::string("none") : e.source; },
       [](const PriceEntry& e) { return or_null(e.source == "none" ? std::string() : e.source); }},
      {{"source_url", "SOURCE URL", false, Show::kMachine},
       nullptr,
       [](const PriceEntry& e) { return or_null(e.source_url()); }},
      {{"checked", "CHECKED"},
       [](const PriceEntry& e) { return e.checked.empty() ? std::string("-") : e.checked; },
       [](const PriceEntry& e) { return or_null(e.checked); }},
      {{"via", "VIA", false, Show::kMachine},
       nullptr,
       [](const PriceEntry& e) { return or_null(e.via); }},
      {{"note", "NOTE", false, Show::kMachine},
       nullptr,
       [](const PriceEntry& e) { return or_null(e.note); }},
      {{"origin", "ORIGIN", false, Show::kIfAny},
       [merged](const PriceEntry& e) { return merged ? e.origin : std::string(); },
       [](const PriceEntry& e) { return nlohmann::json(e.origin); }},
  };
  return make_table(fields, catalog.entries());
}

}  // namespace nodus::billing
