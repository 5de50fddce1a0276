#include "cli/live_status.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>

#include "cli/job_views.h"
#include "core/config.h"
#include "core/cost.h"
#include "core/parse.h"

namespace nodus::cli {
namespace {

int terminal_rows() {
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_row;
}

void write_all(const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;  // a terminal gone away: nothing to draw on
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string status_text(const JobRecord& job, double elapsed) {
  std::string out = "job " + std::to_string(job.id) + " running " + duration_text(elapsed);
  bool billed = job.rate_per_gpu_hour > 0;
  if (billed)
    out += " | " + format_usd(cost_usd(job.gpu_count, job.rate_per_gpu_hour, elapsed)) + " so far";
  // The next thing a cap will do and why; a timeout that comes later is shown as well.
  std::string next = countdown_text(job, elapsed);
  if (!next.empty()) out += " | " + next;
  if (job.timeout_ms && next.find("(timeout") == std::string::npos)
    out += " | timeout in " + duration_text(*job.timeout_ms / 1000.0 - elapsed);
  return out;
}

LiveStatus::LiveStatus(const JobRecord& job, bool enabled) : job_(job) {
  if (!enabled || !is_tty(STDERR_FILENO)) return;
  int rows = terminal_rows();
  if (rows < 3) return;
  color_ = use_color(STDERR_FILENO);
  rows_ = rows;
  // A free line at the bottom (scrolling up if the cursor is there), the cursor back above it,
  // then rows 1..rows-1 become the scroll region: setting it homes the cursor, hence 7/8.
  write_all(
      "\n\x1b[1A\x1b"
      "7\x1b[1;" +
      std::to_string(rows - 1) +
      "r\x1b"
      "8");
  thread_ = std::thread([this] { loop(); });
}

LiveStatus::~LiveStatus() { stop(); }

void LiveStatus::draw(int rows, double elapsed) {
  std::string text = "nodus: " + status_text(job_, elapsed);
  std::string line =
      "\x1b"
      "7\x1b[" +
      std::to_string(rows) + ";1H\x1b[2K" + (color_ ? "\x1b[2m" + text + "\x1b[0m" : text) +
      "\x1b"
      "8";
  write_all(line);
}

void LiveStatus::loop() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    int rows = terminal_rows();
    if (rows >= 3 && rows != rows_) {  // resized: move the region and the line with it
      write_all(
          "\x1b"
          "7\x1b[1;" +
          std::to_string(rows - 1) +
          "r\x1b"
          "8");
      rows_ = rows;
    }
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    draw(rows_, elapsed);
    wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
  }
}

void LiveStatus::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Clear the line, then give the whole terminal back as the scroll region.
  write_all(
      "\x1b"
      "7\x1b[" +
      std::to_string(rows_) +
      ";1H\x1b[2K\x1b[r\x1b"
      "8");
}

}  // namespace nodus::cli
