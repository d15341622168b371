// z3_util.h — what every Z3 user in synth/ needs around a check: the resource count a check used,
// and a watcher that interrupts contexts when a flag turns true.
#pragma once

#include <z3++.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace ps {

// Z3's "rlimit count" statistic of `s` (resource units used so far; 0 when absent).
uint64_t rlimit_count(z3::solver& s);

// While it lives: once *flag turns true (polled every 20 ms), calls `interrupt` once — typically
// z3::context::interrupt on every context in use, which ends a check under way with "unknown"
// (it is meant to be called from another thread). A null flag: never.
class InterruptWatcher {
 public:
  InterruptWatcher(const std::atomic<bool>* flag, std::function<void()> interrupt);
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace ps
