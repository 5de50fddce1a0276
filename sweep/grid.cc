#include "sweep/grid.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/parse.h"
#include "core/secret.h"
#include "core/strings.h"

namespace nodus::sweep {
namespace {

constexpr std::string_view kForms =
    "expected NAME=VALUES with VALUES a comma list (4,8,16), a range (1..8), a stepped range "
    "(1..16:4, 0.1..0.5:0.1), a geometric range (64..1024:x2) or a log range (1e-5..1e-2:log4)";

Error bad(std::string_view spec, const std::string& problem) {
  return Error::permanent("--param '" + std::string(spec) + "': " + problem);
}

bool parse_int(std::string_view s, int64_t* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// A bound as someone would write a number, good or not: "8", "-1", ".5", "nan", "inf".
bool looks_numeric(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  if (std::isdigit(static_cast<unsigned char>(s.front()))) return true;
  if (s.size() > 1 && s.front() == '.' && std::isdigit(static_cast<unsigned char>(s[1])))
    return true;
  std::string word;
  for (char c : s.substr(0, 3))
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return word == "nan" || word == "inf";
}

// "1..8" (and its stepped forms) is a range, and so are "nan..1", "..5" and "1..inf", refused as
// ranges later rather than run as literal values; "../data", "v1..v2" or ".." are literals.
bool looks_like_range(std::string_view v) {
  auto dots = v.find("..");
  if (dots == std::string_view::npos) return false;
  std::string_view left = v.substr(0, dots);
  std::string_view right = v.substr(dots + 2);
  right = right.substr(0, right.find(':'));
  if (looks_numeric(left)) return true;
  return left.empty() && looks_numeric(right);
}

constexpr std::string_view kRange =
    "; a range is START..END (integers), START..END:STEP, START..END:xFACTOR (geometric) or "
    "START..END:logN (N log-spaced values), with START <= END";

// A finite number as written: "3e-4", "0.001", "-2".
bool parse_number(std::string_view s, double* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

// A generated value in the style its bounds were written in: "1e-4" when a bound used an
// exponent, else the shortest decimal of 12 significant digits ("0.3", not 0.30000000000000004).
std::string format_value(double v, bool exponent) {
  if (v == 0) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, exponent ? "%.11e" : "%.12g", v);
  std::string s = buf;
  auto e = s.find_first_of("eE");
  std::string mant = s.substr(0, e), exp = e == std::string::npos ? "" : s.substr(e + 1);
  if (mant.find('.') != std::string::npos) {
    while (mant.back() == '0') mant.pop_back();
    if (mant.back() == '.') mant.pop_back();
  }
  if (exp.empty()) return mant;
  bool negative = exp.front() == '-';
  exp.erase(0, exp.find_first_not_of("+-"));
  exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
  return mant + "e" + (negative ? "-" : "") + exp;
}

Result<std::vector<std::string>> int_range(std::string_view spec, int64_t start, int64_t end,
                                           int64_t step, bool geometric) {
  if (start > end)
    return bad(spec, "range start " + std::to_string(start) + " is above its end " +
                         std::to_string(end) + std::string(kRange));
  if (geometric && (step < 2 || start < 1))
    return bad(spec, "a geometric range needs START >= 1 and FACTOR >= 2" + std::string(kRange));
  if (!geometric && step < 1) return bad(spec, "step must be >= 1" + std::string(kRange));

  std::vector<std::string> values;
  if (geometric) {
    // start >= 1 and factor >= 2: at most 63 values before int64 overflows.
    for (int64_t x = start; x <= end; x *= step) {
      values.push_back(std::to_string(x));
      if (x > end / step) break;
    }
  } else {
    // Count first, in unsigned arithmetic: end - start may not fit an int64.
    uint64_t span = static_cast<uint64_t>(end) - static_cast<uint64_t>(start);
    if (span / static_cast<uint64_t>(step) + 1 > kMaxAxisValues)
      return bad(spec, "more than " + std::to_string(kMaxAxisValues) + " values in one axis");
    for (int64_t x = start;; x += step) {
      values.push_back(std::to_string(x));
      if (static_cast<uint64_t>(end) - static_cast<uint64_t>(x) < static_cast<uint64_t>(step))
        break;
    }
  }
  return values;
}

// Non-integer ranges: values are computed as start + i*step, start * factor^i, or log-spaced
// (never by accumulating, so no rounding drift), and END is included when it is reached within
// a relative 1e-9. The first value (and END when reached) is kept exactly as written.
Result<std::vector<std::string>> float_range(std::string_view spec, std::string_view start_text,
                                             std::string_view end_text, std::string_view step_text,
                                             bool has_step) {
  double start = 0, end = 0;
  if (!parse_number(start_text, &start) || !parse_number(end_text, &end))
    return bad(spec, "range bounds must be numbers" + std::string(kRange));
  if (start > end)
    return bad(spec, "range start " + std::string(start_text) + " is above its end " +
                         std::string(end_text) + std::string(kRange));
  const bool exponent = start_text.find_first_of("eE") != std::string_view::npos ||
                        end_text.find_first_of("eE") != std::string_view::npos;
  if (!has_step)
    return bad(spec,
               "a range with non-integer bounds needs a step (START..END:STEP, :xFACTOR "
               "or :logN)" +
                   std::string(kRange));
  std::vector<double> xs;
  const double tolerance = 1e-9 * std::max(std::fabs(start), std::fabs(end));
  auto too_many = [&] {
    return bad(spec, "more than " + std::to_string(kMaxAxisValues) + " values in one axis");
  };
  if (step_text.substr(0, 3) == "log") {
    int64_t n = 0;
    if (!parse_int(step_text.substr(3), &n) || n < 2)
      return bad(spec, "invalid count in '" + std::string(step_text) + "': logN needs N >= 2" +
                           std::string(kRange));
    if (start <= 0 || end <= start)
      return bad(spec, "a log range needs 0 < START < END" + std::string(kRange));
    if (static_cast<uint64_t>(n) > kMaxAxisValues) return too_many();
    const double a = std::log(start), b = std::log(end);
    for (int64_t i = 0; i < n; ++i)
      xs.push_back(
          i == n - 1 ? end
                     : std::exp(a + (b - a) * static_cast<double>(i) / static_cast<double>(n - 1)));
  } else if (!step_text.empty() && step_text.front() == 'x') {
    double factor = 0;
    if (!parse_number(step_text.substr(1), &factor))
      return bad(spec, "invalid step '" + std::string(step_text) + "'" + std::string(kRange));
    if (start <= 0 || factor <= 1)
      return bad(spec, "a geometric range needs START > 0 and FACTOR > 1" + std::string(kRange));
    for (int64_t i = 0;; ++i) {
      double x = start * std::pow(factor, static_cast<double>(i));
      if (x > end * (1 + 1e-9)) break;
      if (xs.size() >= kMaxAxisValues) return too_many();
      xs.push_back(x);
    }
  } else {
    double step = 0;
    if (!parse_number(step_text, &step))
      return bad(spec, "invalid step '" + std::string(step_text) + "'" + std::string(kRange));
    if (step <= 0) return bad(spec, "step must be > 0" + std::string(kRange));
    if ((end - start) / step + 1 > static_cast<double>(kMaxAxisValues)) return too_many();
    for (int64_t i = 0;; ++i) {
      double x = start + step * static_cast<double>(i);
      if (x > end + tolerance + 1e-9 * step) break;
      if (std::fabs(x) < 1e-9 * step) x = 0;  // -0.3 + 3 x 0.1 is 5.6e-17, not zero
      xs.push_back(x);
    }
  }
  std::vector<std::string> values;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i == 0)
      values.emplace_back(start_text.front() == '+' ? start_text.substr(1) : start_text);
    else if (std::fabs(xs[i] - end) <= tolerance)
      values.emplace_back(end_text.front() == '+' ? end_text.substr(1) : end_text);
    else
      values.push_back(format_value(xs[i], exponent));
  }
  return values;
}

Result<std::vector<std::string>> parse_range(std::string_view spec, std::string_view v) {
  auto dots = v.find("..");
  std::string_view start_text = v.substr(0, dots);
  std::string_view rest = v.substr(dots + 2);
  auto colon = rest.find(':');
  std::string_view end_text = rest.substr(0, colon);
  const bool has_step = colon != std::string_view::npos;
  std::string_view step_text = has_step ? rest.substr(colon + 1) : std::string_view("1");
  if (step_text.empty()) return bad(spec, "invalid step ''" + std::string(kRange));

  int64_t start = 0, end = 0, step = 0;
  bool geometric = step_text.front() == 'x';
  bool ints = parse_int(start_text, &start) && parse_int(end_text, &end);
  bool int_step = parse_int(geometric ? step_text.substr(1) : step_text, &step);
  if (ints && int_step) return int_range(spec, start, end, step, geometric);
  if (ints && !geometric && step_text.substr(0, 3) != "log") {
    double f = 0;
    if (!parse_number(step_text, &f))
      return bad(spec, "invalid step '" + std::string(step_text) + "'" + std::string(kRange));
    if (f <= 0) return bad(spec, "step must be > 0" + std::string(kRange));
  }
  if (ints && geometric) {
    double f = 0;
    if (!parse_number(step_text.substr(1), &f))
      return bad(spec, "invalid step '" + std::string(step_text) + "'" + std::string(kRange));
  }
  return float_range(spec, start_text, end_text, step_text, has_step);
}

}  // namespace

bool is_param_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

Result<Axis> parse_param(std::string_view spec) {
  auto eq = spec.find('=');
  if (eq == std::string_view::npos) return bad(spec, "missing '='; " + std::string(kForms));
  Axis axis;
  axis.name = std::string(trim(spec.substr(0, eq)));
  if (!is_param_name(axis.name))
    return bad(spec, "invalid name '" + axis.name + "': names are [A-Za-z_][A-Za-z0-9_]*");
  std::string_view values = trim(spec.substr(eq + 1));
  if (values.empty()) return bad(spec, "no values; " + std::string(kForms));

  // Each comma-separated item is a value or a range; the axis is their concatenation.
  std::set<std::string> seen;
  size_t pos = 0;
  while (true) {
    size_t comma = values.find(',', pos);
    std::string_view item =
        trim(values.substr(pos, comma == std::string_view::npos ? comma : comma - pos));
    if (item.empty()) return bad(spec, "empty value in the list; " + std::string(kForms));
    std::vector<std::string> items{std::string(item)};
    if (looks_like_range(item)) {
      auto range = parse_range(spec, item);
      if (!range) return range.error();
      items = std::move(*range);
    }
    for (auto& v : items) {
      if (!seen.insert(v).second) return bad(spec, "value '" + v + "' appears twice");
      axis.values.push_back(std::move(v));
    }
    if (axis.values.size() > kMaxAxisValues)
      return bad(spec, "more than " + std::to_string(kMaxAxisValues) + " values in one axis");
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return axis;
}

Result<Grid> parse_grid(const std::vector<std::string>& specs) {
  if (specs.empty())
    return Error::permanent(
        "a sweep needs at least one --param NAME=VALUES, like num_workers=0,4,8");
  Grid grid;
  for (const auto& spec : specs) {
    auto axis = parse_param(spec);
    if (!axis) return axis.error();
    for (const auto& other : grid.axes) {
      if (other.name == axis->name)
        return bad(spec, "param '" + axis->name + "' is given twice; give each name once");
      // Both would set the same NODUS_PARAM_<NAME> variable.
      if (to_upper(other.name) == to_upper(axis->name))
        return bad(spec, "params '" + other.name + "' and '" + axis->name +
                             "' differ only in case; both would set NODUS_PARAM_" +
                             to_upper(axis->name));
    }
    grid.axes.push_back(std::move(*axis));
  }
  return grid;
}

Result<void> check_no_credentials(const Grid& grid) {
  constexpr std::string_view kInstead =
      "; sweep params are printed and stored, so pass secrets in the environment (--env NAME, or "
      "the job's own environment) instead";
  for (const auto& axis : grid.axes) {
    if (is_secret_name(axis.name))
      return Error::permanent("--param " + axis.name + ": its name says it holds a secret" +
                              std::string(kInstead));
    for (const auto& value : axis.values)
      if (std::string shown = redact_value(value); shown != value)
        return Error::permanent("--param " + axis.name + ": its value '" + shown +
                                "' holds a credential" + std::string(kInstead));
  }
  return {};
}

uint64_t cell_count(const Grid& grid) {
  uint64_t n = 1;
  for (const auto& axis : grid.axes) {
    uint64_t k = axis.values.size();
    if (k != 0 && n > UINT64_MAX / k) return UINT64_MAX;
    n *= k;
  }
  return n;
}

Result<void> check_cell_count(const Grid& grid, bool confirmed) {
  uint64_t n = cell_count(grid);
  std::string count = n == UINT64_MAX ? "more than 18446744073709551614" : std::to_string(n);
  if (n > kMaxCells)
    return Error::permanent("this sweep has " + count + " cells; at most " +
                            std::to_string(kMaxCells) + " are allowed: narrow the --param ranges");
  if (n > kConfirmCells && !confirmed)
    return Error::permanent("this sweep has " + count + " cells (more than " +
                            std::to_string(kConfirmCells) + "); pass --yes to run them all");
  return {};
}

Cell cell_at(const Grid& grid, int index) {
  Cell cell;
  cell.index = index;
  cell.params.resize(grid.axes.size());
  // Mixed-radix digits of index, the last axis varying fastest.
  uint64_t rest = static_cast<uint64_t>(index);
  for (size_t a = grid.axes.size(); a-- > 0;) {
    const auto& axis = grid.axes[a];
    cell.params[a] = {axis.name, axis.values[rest % axis.values.size()]};
    rest /= axis.values.size();
  }
  return cell;
}

std::vector<Cell> expand(const Grid& grid) {
  uint64_t n = cell_count(grid);
  std::vector<Cell> cells;
  cells.reserve(n);
  for (uint64_t i = 0; i < n; ++i) cells.push_back(cell_at(grid, static_cast<int>(i)));
  return cells;
}

}  // namespace nodus::sweep

namespace nodus::sweep {

std::vector<int> sample_cells(const Grid& grid, uint64_t n, uint64_t seed) {
  const uint64_t total = cell_count(grid);
  if (n >= total) {
    std::vector<int> all(static_cast<size_t>(total));
    for (uint64_t i = 0; i < total; ++i) all[i] = static_cast<int>(i);
    return all;
  }
  // SplitMix64 and rejection sampling: the same seed and grid pick the same cells with every
  // compiler and library (std:: distributions are implementation-defined).
  uint64_t state = seed;
  auto next = [&state] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  auto below = [&next](uint64_t bound) {  // uniform in [0, bound)
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    for (;;) {
      uint64_t r = next();
      if (r < limit) return r % bound;
    }
  };
  // Floyd's algorithm: n distinct values of [0, total) in O(n), whatever the grid's size.
  std::set<uint64_t> chosen;
  for (uint64_t j = total - n; j < total; ++j) {
    uint64_t t = below(j + 1);
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  return {chosen.begin(), chosen.end()};
}

Result<void> check_sample(const Grid& grid, uint64_t n, bool confirmed) {
  const uint64_t total = cell_count(grid);
  if (total > kMaxSampledGrid)
    return Error::permanent("--sample: the grid has more than " + std::to_string(kMaxSampledGrid) +
                            " cells; narrow the --param ranges");
  if (n == 0) return Error::permanent("--sample: invalid value '0': expected 1 or more cells");
  const uint64_t m = std::min(n, total);
  if (m > kMaxCells)
    return Error::permanent("--sample " + std::to_string(n) + ": at most " +
                            std::to_string(kMaxCells) + " cells are allowed");
  if (m > kConfirmCells && !confirmed)
    return Error::permanent("--sample " + std::to_string(n) + ": more than " +
                            std::to_string(kConfirmCells) + " cells; pass --yes to run them all");
  return {};
}

}  // namespace nodus::sweep
