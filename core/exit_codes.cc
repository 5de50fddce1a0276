#include <algorithm>

#include "core/error.h"

namespace nodus::exit_code {

const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      {"the job's own", "the job ended by itself (128+N if it died of signal N)"},
      {"121", "stopped by `--min-util`"},
      {"122", "stopped by `--max-cost` (or a sweep's `--budget`)"},
      {"123",
       "killed because its enforcers were attacked: the job's sentinel killed, or its supervisor "
       "stopped (state `tampered`)"},
      {"124", "stopped by `--timeout` (as timeout(1))"},
      {"125", "nodus itself failed: bad flags, prices file, store, backend"},
      {"126 / 127", "the command cannot run / is not found"},
      {"130", "interrupted with Ctrl-C (the job is recorded as cancelled)"},
      {"143", "stopped with `nodus stop`"},
  };
  return rows;
}

std::string help_text() {
  std::string out = "Exit status:\n";
  for (const auto& row : table()) {
    std::string when;
    for (const char* c = row.when; *c; ++c)
      if (*c != '`') when += *c;
    std::string code = row.code;
    code.resize(std::max<size_t>(code.size(), 15), ' ');
    out += "  " + code + " " + when + "\n";
  }
  return out;
}

}  // namespace nodus::exit_code
