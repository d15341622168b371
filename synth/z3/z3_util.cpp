// z3_util.cpp — see z3_util.h.
#include "synth/z3/z3_util.h"

#include <chrono>
#include <utility>

namespace ps {

uint64_t rlimit_count(z3::solver& s) {
  z3::stats st = s.statistics();
  for (unsigned i = 0; i < st.size(); ++i)
    if (st.key(i) == "rlimit count") return st.is_uint(i) ? st.uint_value(i) : static_cast<uint64_t>(st.double_value(i));
  return 0;
}

InterruptWatcher::InterruptWatcher(const std::atomic<bool>* flag, std::function<void()> interrupt) {
  if (!flag) return;
  thread_ = std::thread([this, flag, interrupt = std::move(interrupt)] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      if (flag->load()) {
        interrupt();
        return;
      }
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
  });
}

InterruptWatcher::~InterruptWatcher() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace ps
