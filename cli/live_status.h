#pragma once
// The live status line of an attached `nodus run` on a terminal: elapsed time, cost so far and
// time left before the cost cap or timeout, redrawn every second on the terminal's last row.
// The rows above are made a scroll region, so the job's own output scrolls there untouched.
// Only when stderr is a terminal (and not under CI); colors only when use_color(2).

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "core/job.h"

namespace nodus::cli {

// What the line says at `elapsed` seconds: "job 3 running 1m05s | $0.42 so far | cap $5.00 in
// 11m20s". Pure, for tests.
std::string status_text(const JobRecord& job, double elapsed);

class LiveStatus {
 public:
  // Starts drawing when `enabled` and stderr is a terminal of at least 3 rows; the clock starts
  // now (the job is about to start).
  LiveStatus(const JobRecord& job, bool enabled);
  ~LiveStatus();  // stop()
  // Clears the line and gives the whole terminal back; idempotent.
  void stop();

  LiveStatus(const LiveStatus&) = delete;
  LiveStatus& operator=(const LiveStatus&) = delete;

 private:
  void loop();
  void draw(int rows, double elapsed);

  JobRecord job_;
  bool color_ = false;
  int rows_ = 0;  // terminal rows when the scroll region was set; 0: not drawing
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace nodus::cli
