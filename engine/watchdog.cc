#include "engine/watchdog.h"

namespace nodus::engine {

Watchdog::Watchdog(std::function<std::optional<Time>()> next, std::function<void(Time)> fire)
    : next_(std::move(next)), fire_(std::move(fire)) {
  poke();
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::poke() {
  // Asked before taking mu_: next() takes the caller's lock, which fire() takes too.
  const bool start = !thread_.joinable() && next_();
  {
    std::lock_guard lock(mu_);
    ++pokes_;
  }
  if (start) thread_ = std::thread([this] { loop(); });
  cv_.notify_all();
}

void Watchdog::loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    const unsigned seen = pokes_;
    lock.unlock();
    const std::optional<Time> at = next_();
    lock.lock();
    if (stop_) break;
    if (pokes_ != seen) continue;  // the deadlines moved while we looked
    if (!at) {
      cv_.wait(lock, [&] { return stop_ || pokes_ != seen; });
      continue;
    }
    // steady_clock is CLOCK_MONOTONIC: an absolute wait that no change of the wall clock moves.
    if (cv_.wait_until(lock, *at, [&] { return stop_ || pokes_ != seen; })) continue;
    lock.unlock();
    fire_(std::chrono::steady_clock::now());
    lock.lock();
  }
}

}  // namespace nodus::engine
