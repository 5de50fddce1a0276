#pragma once
// Watchdog: a thread of its own that sleeps until an absolute instant on the steady clock and
// then calls `fire`. The supervisor's deadlines (TERM at t-grace, KILL at t) are carried out from
// here, apart from the loop that reads the job's output and metrics: however much the job
// writes, and however slow a --metric-regex is on it, the stop goes out on time.
// next() and fire() run on the watchdog's thread and must take their own locks; poke() after
// anything that may have moved next(). The thread starts with the first deadline (at construction
// or at a poke()): a job with no timeout, cap or stop under way costs no thread.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace nodus::engine {

class Watchdog {
 public:
  using Time = std::chrono::steady_clock::time_point;
  Watchdog(std::function<std::optional<Time>()> next, std::function<void(Time now)> fire);
  ~Watchdog();  // stops the thread and joins it
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void poke();  // from the thread that constructed it

 private:
  void loop();

  std::function<std::optional<Time>()> next_;
  std::function<void(Time)> fire_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  unsigned pokes_ = 0;
  std::thread thread_;
};

}  // namespace nodus::engine
