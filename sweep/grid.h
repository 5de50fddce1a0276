#pragma once
// A sweep's grid: one axis per `--param NAME=VALUES`, expanded into cells (the Cartesian product,
// first param outermost). VALUES is one of
//   a comma list      4,8,16   resnet18,vit    (values are trimmed; no empty or repeated value)
//   an integer range  1..8                     (inclusive: 1,2,...,8)
//   a stepped range   1..16:4                  (1,5,9,13: start, start+step, ... up to the end)
//   a geometric range 64..1024:x2              (64,128,...,1024: start, start*factor, ... up to
//                                               the end; start >= 1, factor >= 2)
//   a float range    0.1..0.5:0.1   (0.1,0.2,...,0.5; any range with a non-integer bound or
//                                   step; a non-integer range needs a step)
//   a float geometric 1e-4..1e-2:x10 (START > 0, FACTOR > 1)
//   a log range      1e-5..1e-2:log4 (4 values evenly spaced in log: 1e-5,1e-4,1e-3,1e-2)
// Values are kept as text exactly as written (3e-4 stays 3e-4); a range's START, and its END
// when reached, keep the user's spelling, and the values between are written in the bounds'
// style (with an exponent if a bound had one) to 12 significant digits.
// Lists may mix values and ranges: 0,2..8:2,16 is 0,2,4,6,8,16. An item whose text before
// ".." starts with a digit (or a sign and a digit) is a range and must be a valid one; anything
// else, like "../data", is a literal value.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace nodus::sweep {

// Sweeps of more cells than this need the user's confirmation (the CLI's --yes).
inline constexpr uint64_t kConfirmCells = 1000;
// No sweep may have more cells than this, confirmed or not: the runner keeps one row per cell.
inline constexpr uint64_t kMaxCells = 100'000;
// No axis may have more values than this.
inline constexpr uint64_t kMaxAxisValues = 10'000;

struct Axis {
  std::string name;
  std::vector<std::string> values;  // in the order given (ranges ascending)
};

struct Grid {
  std::vector<Axis> axes;  // in the order the --param flags were given
};

struct Param {
  std::string name;
  std::string value;
  bool operator==(const Param&) const = default;
};

// One cell of the grid: its index (0-based, row-major with the first axis outermost) and one
// (name, value) per axis, in axis order.
struct Cell {
  int index = 0;
  std::vector<Param> params;
};

// True for [A-Za-z_][A-Za-z0-9_]*.
bool is_param_name(std::string_view name);

// Parses one `--param` value, "NAME=VALUES".
Result<Axis> parse_param(std::string_view spec);

// Parses every `--param` value; at least one is needed and names must be distinct.
Result<Grid> parse_grid(const std::vector<std::string>& specs);

// Refuses a grid that holds a credential: a param whose name is_secret_name (password=a,b) or a
// value redact_value would change (a URL's password, a token query parameter, a JWT). Params are
// printed (progress, tables, show) and stored exactly, since --resume re-creates the cells from
// them, so a secret has no place there; the job's environment is where it belongs. The message
// names the param and never the secret.
Result<void> check_no_credentials(const Grid& grid);

// Number of cells, computed without expanding; saturates at UINT64_MAX.
uint64_t cell_count(const Grid& grid);

// Refuses more than kConfirmCells cells unless confirmed, and more than kMaxCells always.
Result<void> check_cell_count(const Grid& grid, bool confirmed);

// The cell at index (0 <= index < cell_count(grid) <= kMaxCells).
Cell cell_at(const Grid& grid, int index);

// --sample N picks cells of grids up to this size (cell indices are ints).
inline constexpr uint64_t kMaxSampledGrid = 2'000'000'000;

// --sample N --seed S: min(n, cell_count) distinct cell indices, ascending, chosen uniformly at
// random from the seed; the same grid, n and seed give the same cells on every platform.
std::vector<int> sample_cells(const Grid& grid, uint64_t n, uint64_t seed);

// Refuses a sample of 0, a grid too large to sample (kMaxSampledGrid), and a sample of more
// than kConfirmCells cells unless confirmed (kMaxCells always).
Result<void> check_sample(const Grid& grid, uint64_t n, bool confirmed);

// Every cell in index order. Call check_cell_count first: this allocates them all.
std::vector<Cell> expand(const Grid& grid);

}  // namespace nodus::sweep
