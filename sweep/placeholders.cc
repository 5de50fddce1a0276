#include "sweep/placeholders.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "core/parse.h"

namespace nodus::sweep {
namespace {

// The argument as it appears in an error message: one line, not too long.
std::string quoted(const std::string& arg) {
  std::string out;
  for (char c : arg) {
    if (out.size() >= 80) return "'" + out + "...'";
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return "'" + out + "'";
}

std::string names_of(const Grid& grid) {
  std::string out;
  for (const auto& axis : grid.axes) out += (out.empty() ? "" : ", ") + axis.name;
  return out;
}

}  // namespace

Result<ArgvTemplate> ArgvTemplate::parse(const std::vector<std::string>& argv, const Grid& grid,
                                         std::string_view flag) {
  ArgvTemplate t;
  t.source_ = argv;
  for (size_t a = 0; a < argv.size(); ++a) {
    const std::string& arg = argv[a];
    std::string where = flag.empty() ? " in argument " + std::to_string(a + 1) + " " + quoted(arg)
                                     : " in " + std::string(flag) + " " + quoted(arg);
    std::vector<Piece> pieces;
    std::string literal;
    for (size_t i = 0; i < arg.size(); ++i) {
      char c = arg[i];
      if (c == '}') {
        if (i + 1 < arg.size() && arg[i + 1] == '}') {
          literal += '}';
          ++i;
          continue;
        }
        return Error::permanent("single '}'" + where + "; write }} for a literal brace");
      }
      if (c != '{') {
        literal += c;
        continue;
      }
      if (i + 1 < arg.size() && arg[i + 1] == '{') {
        literal += '{';
        ++i;
        continue;
      }
      size_t close = arg.find('}', i + 1);
      if (close == std::string::npos)
        return Error::permanent("unclosed '{'" + where + "; write {{ for a literal brace");
      std::string name = arg.substr(i + 1, close - i - 1);
      std::string shown = "{" + name + "}";
      if (!is_param_name(name))
        return Error::permanent("invalid placeholder " + shown + where +
                                "; placeholders are {NAME} with NAME a --param name, and {{ and "
                                "}} are literal braces");
      int param = -1;
      for (size_t p = 0; p < grid.axes.size(); ++p)
        if (grid.axes[p].name == name) param = static_cast<int>(p);
      if (param < 0)
        return Error::permanent("unknown placeholder " + shown + where +
                                "; params: " + names_of(grid));
      if (!literal.empty()) pieces.push_back({std::move(literal), -1});
      literal.clear();
      pieces.push_back({"", param});
      i = close;
    }
    if (!literal.empty() || pieces.empty()) pieces.push_back({std::move(literal), -1});
    t.args_.push_back(std::move(pieces));
  }
  return t;
}

std::vector<std::string> ArgvTemplate::resolve(const Cell& cell) const {
  std::vector<std::string> argv;
  argv.reserve(args_.size());
  for (const auto& pieces : args_) {
    std::string arg;
    for (const auto& piece : pieces)
      arg += piece.param < 0 ? piece.literal : cell.params.at(piece.param).value;
    argv.push_back(std::move(arg));
  }
  return argv;
}

std::map<std::string, std::string> cell_env(const Cell& cell) {
  std::map<std::string, std::string> env;
  for (const auto& p : cell.params) env["NODUS_PARAM_" + to_upper(p.name)] = p.value;
  env["NODUS_SWEEP_CELL"] = std::to_string(cell.index + 1);  // numbered from 1, as shown
  return env;
}

std::string cell_label(const std::vector<Param>& params) {
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : " ") + p.name + "=" + p.value;
  return out;
}

nlohmann::json params_json(const std::vector<Param>& params) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& p : params) {
    auto number = parse_untrusted_json(p.value);
    // A number only when it prints back exactly as typed: 1e5 and 1.50 stay text, so every
    // output shows the value the user wrote.
    bool numeric =
        number.is_number() && std::isfinite(number.get<double>()) && number.dump() == p.value;
    out[p.name] = numeric ? number : nlohmann::json(p.value);
  }
  return out;
}

}  // namespace nodus::sweep
