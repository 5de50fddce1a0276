// Catalog::parse and Catalog::builtin: catalog JSON to PriceEntry values, with every complaint
// pointing at "<origin>:<line>".

#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "billing/builtin_prices.h"  // generated from billing/prices.json
#include "billing/catalog.h"
#include "billing/json_lines.h"
#include "core/json_input.h"
#include "core/parse.h"

namespace nodus::billing {
namespace {

using nlohmann::json;

constexpr const char* kFields =
    "type, aliases, usd_per_gpu_hour, source, checked, via, note, device_names, peak_tflops";

bool is_field(const std::string& key) {
  for (const char* f : {"type", "aliases", "usd_per_gpu_hour", "source", "checked", "via", "note",
                        "device_names", "peak_tflops"})
    if (key == f) return true;
  return false;
}

// Names are typed on the command line as --gpu NAME:COUNT, so they cannot hold ':' ',' or spaces.
bool is_valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool is_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  int month = std::stoi(s.substr(5, 2));
  int day = std::stoi(s.substr(8, 2));
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

// nlohmann's message minus its "[json.exception...] parse error at line L, column C: " prefix,
// since the caller states the line itself.
std::string parse_error_words(const json::parse_error& e) {
  std::string what = e.what();
  size_t column = what.find("column ");
  size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
  if (colon != std::string::npos) what = what.substr(colon + 2);
  return "invalid JSON: " + what;
}

// Reads one "gpus" entry; knows where it is so that each error names the offending line.
class EntryReader {
 public:
  EntryReader(const json& entry, std::string pointer, const std::string& origin,
              const JsonLines& lines)
      : entry_(entry), pointer_(std::move(pointer)), origin_(origin), lines_(lines) {}

  Result<PriceEntry> read() {
    if (!entry_.is_object()) return fail("", "each entry of \"gpus\" must be an object");
    PriceEntry e;
    auto type = entry_.find("type");
    if (type == entry_.end()) return fail("", "GPU entry without \"type\"");
    if (!type->is_string() || !is_valid_name(type->get<std::string>()))
      return fail("/type", "\"type\" must be a name of letters, digits, '-', '_' or '.', not " +
                               type->dump());
    e.type = type->get<std::string>();
    subject_ = "GPU type '" + e.type + "': ";
    for (const auto& item : entry_.items())
      if (!is_field(item.key()))
        return fail("/" + pointer_token(item.key()),
                    "unknown field \"" + item.key() + "\" (allowed: " + kFields + ")");

    auto rate = entry_.find("usd_per_gpu_hour");
    if (rate == entry_.end()) return fail("", "missing \"usd_per_gpu_hour\"");
    if (!rate->is_number())
      return fail("/usd_per_gpu_hour",
                  "\"usd_per_gpu_hour\" must be a number, not " + rate->dump());
    e.usd_per_gpu_hour = rate->get<double>();
    // No GPU rents for anywhere near $1000 an hour: a larger rate is a typo (or 1e308), and
    // would make every cap deadline meaningless.
    if (!std::isfinite(e.usd_per_gpu_hour) || e.usd_per_gpu_hour < 0 ||
        e.usd_per_gpu_hour > kMaxUsdPerGpuHour)
      return fail("/usd_per_gpu_hour", "\"usd_per_gpu_hour\" must be a number from 0 to " +
                                           std::to_string(static_cast<int>(kMaxUsdPerGpuHour)) +
                                           " (USD per GPU-hour), not " + rate->dump());

    for (auto [key, field] : {std::pair{"source", &e.source}, std::pair{"checked", &e.checked},
                              std::pair{"via", &e.via}, std::pair{"note", &e.note}}) {
      auto it = entry_.find(key);
      if (it == entry_.end()) continue;
      if (!it->is_string())
        return fail(std::string("/") + key,
                    std::string("\"") + key + "\" must be a string, not " + it->dump());
      *field = it->get<std::string>();
    }
    if (!e.checked.empty() && !is_date(e.checked))
      return fail("/checked", "\"checked\" must be a date YYYY-MM-DD, not \"" + e.checked + "\"");

    if (auto r = strings("aliases", e.aliases, true); !r.ok()) return r.error();
    if (auto r = strings("device_names", e.device_names, false); !r.ok()) return r.error();
    if (auto r = peak(e); !r.ok()) return r.error();
    return e;
  }

  // The line of `sub` (a pointer below this entry).
  int line(const std::string& sub) const { return lines_.line_of(pointer_ + sub); }

 private:
  Result<void> strings(const char* key, std::vector<std::string>& out, bool names) {
    auto it = entry_.find(key);
    if (it == entry_.end()) return {};
    std::string at = std::string("/") + key;
    if (!it->is_array())
      return fail(at,
                  std::string("\"") + key + "\" must be an array of strings, not " + it->dump());
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      bool ok = v.is_string() &&
                (names ? is_valid_name(v.get<std::string>()) : !v.get<std::string>().empty());
      if (!ok)
        return fail(
            at + "/" + std::to_string(i),
            std::string("\"") + key + "\" entries must be " +
                (names ? "names of letters, digits, '-', '_' or '.'" : "non-empty strings") +
                ", not " + v.dump());
      out.push_back(v.get<std::string>());
    }
    return {};
  }

  // "peak_tflops": {"bf16": 989.4, "tf32": 494.7, "fp32": 66.9, "source": "...", "checked":
  // "YYYY-MM-DD"}: bf16 and source required, each TFLOPS above 0 and below 100000.
  Result<void> peak(PriceEntry& e) {
    auto it = entry_.find("peak_tflops");
    if (it == entry_.end()) return {};
    const std::string at = "/peak_tflops";
    if (!it->is_object())
      return fail(at,
                  "\"peak_tflops\" must be an object {bf16, tf32, fp32, source, checked}, "
                  "not " +
                      it->dump());
    PeakFlops p;
    for (const auto& item : it->items()) {
      const std::string& k = item.key();
      const json& v = item.value();
      double* number = k == "bf16"   ? &p.bf16
                       : k == "tf32" ? &p.tf32
                       : k == "fp32" ? &p.fp32
                                     : nullptr;
      std::string* text = k == "source" ? &p.source : k == "checked" ? &p.checked : nullptr;
      if (number) {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 ||
            v.get<double>() >= 1e5)
          return fail(
              at + "/" + pointer_token(k),
              "\"peak_tflops\"." + k + " must be TFLOPS above 0 and below 100000, not " + v.dump());
        *number = v.get<double>();
      } else if (text) {
        if (!v.is_string())
          return fail(at + "/" + pointer_token(k),
                      "\"peak_tflops\"." + k + " must be a string, not " + v.dump());
        *text = v.get<std::string>();
      } else {
        return fail(at + "/" + pointer_token(k),
                    "unknown field \"" + k +
                        "\" in \"peak_tflops\" (allowed: bf16, tf32, fp32, "
                        "source, checked)");
      }
    }
    if (p.bf16 <= 0) return fail(at, "\"peak_tflops\" needs \"bf16\" (dense TFLOPS)");
    if (p.source.empty()) return fail(at, "\"peak_tflops\" needs \"source\" (the datasheet)");
    if (!p.checked.empty() && !is_date(p.checked))
      return fail(at + "/checked",
                  "\"peak_tflops\".checked must be a date YYYY-MM-DD, not \"" + p.checked + "\"");
    e.peak = p;
    return {};
  }

  Error fail(const std::string& sub, const std::string& what) const {
    return Error::permanent(origin_ + ":" + std::to_string(line(sub)) + ": " + subject_ + what);
  }

  const json& entry_;
  std::string pointer_;
  const std::string& origin_;
  const JsonLines& lines_;
  std::string subject_;  // "GPU type 'X': " once the type is known
};

// The line of the first occurrence of the token that `what` quotes ('...'), else 1.
int quoted_token_line(std::string_view text, const std::string& what) {
  size_t open = what.find('\'');
  size_t close = open == std::string::npos ? open : what.find('\'', open + 1);
  if (close == std::string::npos) return 1;
  size_t at = text.find(what.substr(open + 1, close - open - 1));
  return at == std::string_view::npos ? 1 : line_at(text, at);
}

// nlohmann's message minus its "[json.exception.kind.id] " tag.
std::string exception_words(const json::exception& e) {
  std::string what = e.what();
  size_t tag = what.find("] ");
  return tag == std::string::npos ? what : what.substr(tag + 2);
}

Error error_at(const std::string& origin, int line, const std::string& what) {
  return Error::permanent(origin + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

Result<Catalog> Catalog::parse(std::string_view json_text, const std::string& origin) {
  // Refused before parsing: a bracket bomb under the size limit would take gigabytes to build.
  if (auto at = json_too_deep_at(json_text))
    return error_at(origin, line_at(json_text, *at), json_depth_words());
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    // e.byte counts the characters read, the offending one included.
    return error_at(origin, line_at(json_text, e.byte > 0 ? e.byte - 1 : 0), parse_error_words(e));
  } catch (const json::exception& e) {
    // A number too large for a double ("number overflow parsing '1e999'"): the message quotes the
    // token, which locates it well enough.
    return error_at(origin, quoted_token_line(json_text, e.what()),
                    std::string("invalid JSON: ") + exception_words(e));
  }
  JsonLines lines(json_text);
  if (!doc.is_object()) return error_at(origin, 1, "expected an object with a \"gpus\" array");
  for (const auto& item : doc.items())
    if (item.key() != "gpus")
      return error_at(origin, lines.line_of("/" + pointer_token(item.key())),
                      "unknown field \"" + item.key() + "\" (allowed: gpus)");
  auto gpus = doc.find("gpus");
  if (gpus == doc.end() || !gpus->is_array() || gpus->empty())
    return error_at(origin, lines.line_of("/gpus"), "expected a non-empty \"gpus\" array");

  Catalog catalog;
  catalog.origin_ = origin;
  std::map<std::string, std::string> taken;  // lower-cased type or alias -> the type that has it
  for (size_t i = 0; i < gpus->size(); ++i) {
    EntryReader reader((*gpus)[i], "/gpus/" + std::to_string(i), origin, lines);
    auto entry = reader.read();
    if (!entry.ok()) return entry.error();
    std::vector<std::pair<std::string, std::string>> names = {{entry->type, "/type"}};
    for (size_t a = 0; a < entry->aliases.size(); ++a)
      names.emplace_back(entry->aliases[a], "/aliases/" + std::to_string(a));
    for (const auto& [name, at] : names) {
      auto [it, fresh] = taken.emplace(to_lower(name), entry->type);
      if (!fresh)
        return error_at(origin, reader.line(at),
                        "duplicate GPU name '" + name + "' (already used by " + it->second + ")");
    }
    entry->origin = origin;
    catalog.entries_.push_back(std::move(*entry));
  }
  return catalog;
}

const Catalog& Catalog::builtin() {
  static const Catalog catalog = [] {
    auto parsed = parse(kBuiltinPricesJson, "built-in");
    // prices.json is compiled in and covered by tests: failing here is a build defect.
    if (!parsed.ok()) throw std::logic_error("billing/prices.json: " + parsed.error().message);
    return std::move(*parsed);
  }();
  return catalog;
}

}  // namespace nodus::billing
