#pragma once
// How a cell's values reach its job: {NAME} placeholders in the command's arguments, environment
// variables NODUS_PARAM_<NAME> and NODUS_SWEEP_CELL, a display label and a JSON object.
//
// Values are substituted into argv elements, never through a shell: a value such as
// "$(rm -rf ~)" or ";reboot" stays one literal argument. Substitution is one pass, so a value
// that itself contains "{other}" is not expanded again. "{{" and "}}" are literal braces.

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sweep/grid.h"

namespace nodus::sweep {

// A command line whose placeholders were checked against the grid's params before anything runs.
class ArgvTemplate {
 public:
  // Fails on an unknown placeholder, an empty or malformed one, an unclosed '{' or a single '}',
  // naming the argument (1-based, the command itself is argument 1) and the known params.
  // `flag` (for a flag's value, such as sweep's --gpu H100:{gpus}): the errors name it instead.
  static Result<ArgvTemplate> parse(const std::vector<std::string>& argv, const Grid& grid,
                                    std::string_view flag = {});

  // The argv of one cell of the grid the template was parsed against.
  std::vector<std::string> resolve(const Cell& cell) const;

  const std::vector<std::string>& source() const { return source_; }

 private:
  struct Piece {
    std::string literal;  // text to copy, when param < 0
    int param = -1;       // else the axis whose value goes here
  };
  std::vector<std::string> source_;
  std::vector<std::vector<Piece>> args_;
};

// NODUS_PARAM_<NAME uppercased>=value for each param, and NODUS_SWEEP_CELL=index + 1: the cell's
// number as the sweep's table, ps (s3:2) and show (cell 2) give it.
std::map<std::string, std::string> cell_env(const Cell& cell);

// "num_workers=4 batch_size=128": params in axis order.
std::string cell_label(const std::vector<Param>& params);

// {"num_workers": 4, "model": "vit"}: values that are JSON numbers printing back exactly as
// typed become numbers; others (1e5, 1.50, 007) stay the text typed.
nlohmann::json params_json(const std::vector<Param>& params);

}  // namespace nodus::sweep
