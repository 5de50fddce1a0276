#pragma once
// Headless Chromium for the report tests: find it, run it on a local file with a fresh profile
// and a hard time limit, and read what the page logged to the console.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace nodus::report::testing {

// $NODUS_CHROMIUM if set, else `chromium` or `chromium-browser` found on PATH.
std::optional<std::string> find_chromium();

struct BrowserRun {
  int exit_code = -1;
  bool timed_out = false;
  std::string out;  // stdout (--dump-dom writes the DOM here)
  std::string err;  // stderr (--enable-logging=stderr writes the log here)
};

// Runs `binary --headless --no-sandbox ... <extra_args> file://<html_path>` with a new
// --user-data-dir under work_dir, in its own process group. After `timeout`, or once it exits,
// the whole group is killed, so no renderer or helper process outlives the call.
BrowserRun run_chromium(const std::string& binary, const std::string& html_path,
                        const std::vector<std::string>& extra_args, const std::string& work_dir,
                        std::chrono::seconds timeout = std::chrono::seconds(60));

// Log lines that come from a page rather than the browser: console messages, uncaught errors,
// Content-Security-Policy violations. Chromium's own noise (D-Bus, GPU probing) is ignored.
std::vector<std::string> page_console_lines(const std::string& log);

}  // namespace nodus::report::testing
