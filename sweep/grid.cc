#include "sweep/grid.h"

#include <cctype>
#include <charconv>
#include <set>

#include "core/parse.h"
#include "core/strings.h"

namespace nodus::sweep {
namespace {

constexpr std::string_view kForms =
    "expected NAME=VALUES with VALUES a comma list (4,8,16), a range (1..8), a stepped range "
    "(1..16:4) or a geometric range (64..1024:x2)";

Error bad(std::string_view spec, const std::string& problem) {
  return Error::permanent("--param '" + std::string(spec) + "': " + problem);
}

bool parse_int(std::string_view s, int64_t* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// "1..8" (and its stepped forms) is a range; "../data" or "v1..v2" is a literal.
bool looks_like_range(std::string_view v) {
  auto dots = v.find("..");
  if (dots == std::string_view::npos) return false;
  std::string_view left = v.substr(0, dots);
  if (!left.empty() && (left.front() == '-' || left.front() == '+')) left.remove_prefix(1);
  return !left.empty() && std::isdigit(static_cast<unsigned char>(left.front()));
}

Result<std::vector<std::string>> parse_range(std::string_view spec, std::string_view v) {
  constexpr std::string_view kRange =
      "; a range is START..END, START..END:STEP or START..END:xFACTOR with integer bounds, "
      "START <= END, STEP >= 1, FACTOR >= 2";
  auto dots = v.find("..");
  std::string_view start_text = v.substr(0, dots);
  std::string_view rest = v.substr(dots + 2);
  auto colon = rest.find(':');
  std::string_view end_text = rest.substr(0, colon);
  std::string_view step_text =
      colon == std::string_view::npos ? std::string_view("1") : rest.substr(colon + 1);
  bool geometric = !step_text.empty() && step_text.front() == 'x';
  if (geometric) step_text.remove_prefix(1);

  int64_t start = 0, end = 0, step = 0;
  if (!parse_int(start_text, &start) || !parse_int(end_text, &end))
    return bad(spec, "range bounds must be 64-bit integers" + std::string(kRange));
  if (!parse_int(step_text, &step))
    return bad(spec,
               "invalid step '" + std::string(rest.substr(colon + 1)) + "'" + std::string(kRange));
  if (start > end)
    return bad(spec, "range start " + std::to_string(start) + " is above its end " +
                         std::to_string(end) + std::string(kRange));
  if (geometric && (step < 2 || start < 1))
    return bad(spec, "a geometric range needs START >= 1 and FACTOR >= 2" + std::string(kRange));
  if (!geometric && step < 1) return bad(spec, "step must be >= 1" + std::string(kRange));

  std::vector<std::string> values;
  auto too_many = [&] {
    return bad(spec, "more than " + std::to_string(kMaxAxisValues) + " values in one axis");
  };
  if (geometric) {
    // start >= 1 and factor >= 2: at most 63 values before int64 overflows.
    for (int64_t x = start; x <= end; x *= step) {
      values.push_back(std::to_string(x));
      if (x > end / step) break;
    }
  } else {
    // Count first, in unsigned arithmetic: end - start may not fit an int64.
    uint64_t span = static_cast<uint64_t>(end) - static_cast<uint64_t>(start);
    if (span / static_cast<uint64_t>(step) + 1 > kMaxAxisValues) return too_many();
    for (int64_t x = start;; x += step) {
      values.push_back(std::to_string(x));
      if (static_cast<uint64_t>(end) - static_cast<uint64_t>(x) < static_cast<uint64_t>(step))
        break;
    }
  }
  if (values.size() > kMaxAxisValues) return too_many();
  return values;
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
