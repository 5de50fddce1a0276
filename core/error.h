#pragma once
// Fatal is the one exception type of nodus: bad input, misconfiguration, an unusable store.
// main() catches it, prints "nodus: <message>" on one line and exits with its code.

#include <stdexcept>
#include <string>
#include <vector>

#include "core/result.h"

namespace nodus {

// Exit codes of the nodus binary (README "Exit status").
namespace exit_code {
inline constexpr int kLowUtilization = 121;  // stopped by --min-util
inline constexpr int kCostCap = 122;         // stopped by --max-cost or a sweep's --budget
inline constexpr int kTampered = 123;        // killed: its enforcers were killed or stopped
inline constexpr int kTimeout = 124;         // stopped by --timeout, as timeout(1)
inline constexpr int kNodusError = 125;      // nodus itself failed (bad input, store, backend)
inline constexpr int kCannotRun = 126;       // command found but not executable
inline constexpr int kNotFound = 127;        // command not found
inline constexpr int kInterrupted = 130;     // Ctrl-C
inline constexpr int kStopped = 143;         // `nodus stop` (128 + SIGTERM)

// The one table of them, as the README's "Exit status" prints it (a test compares the two) and
// `nodus --help-all` ends with it: {code, when}, in Markdown.
struct Row {
  const char* code;
  const char* when;
};
const std::vector<Row>& table();
// The table as help text: aligned, backticks dropped.
std::string help_text();
}  // namespace exit_code

class Fatal : public std::runtime_error {
 public:
  explicit Fatal(const std::string& message, int code = exit_code::kNodusError)
      : std::runtime_error(message), code_(code) {}
  explicit Fatal(const Error& e) : std::runtime_error(e.message), code_(e.exit_code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// Returns the value or throws the error as Fatal: for call sites where failure ends the program.
template <typename T>
T value_or_throw(Result<T> r) {
  if (!r.ok()) throw Fatal(r.error());
  return std::move(r.value());
}
inline void value_or_throw(Result<void> r) {
  if (!r.ok()) throw Fatal(r.error());
}

}  // namespace nodus
