// parallel_map.h — a deterministic parallel map for the tuner.
//
// Guarantees: fn(i) is called exactly once for every i in [0, n) (unless stop() turns true first,
// in which case the remaining indices are skipped and reported), on at most `threads` threads
// (the caller's thread is one of them). Results are written by index by fn itself, so the outcome
// never depends on which thread ran what or in which order they finished.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace ps::tuner_detail {

// Returns how many indices were skipped because stop() returned true before they started.
inline int parallel_for(int n, int threads, const std::function<void(int)>& fn,
                        const std::function<bool()>& stop = {}) {
  std::atomic<int> next{0};
  std::atomic<int> skipped{0};
  auto worker = [&] {
    for (;;) {
      const int i = next.fetch_add(1);
      if (i >= n) return;
      if (stop && stop()) {
        skipped.fetch_add(1);
        continue;
      }
      fn(i);
    }
  };
  const int extra = std::max(0, std::min(threads, n) - 1);
  std::vector<std::thread> pool;
  pool.reserve(extra);
  for (int t = 0; t < extra; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return skipped.load();
}

}  // namespace ps::tuner_detail
