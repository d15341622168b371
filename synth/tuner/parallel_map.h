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
// fn(i, worker): `worker` in [0, threads) names the thread that runs it (the caller's is 0), for
// per-thread scratch space; no two calls with the same worker run at once.
inline int parallel_for_workers(int n, int threads, const std::function<void(int, int)>& fn,
                                const std::function<bool()>& stop = {}) {
  std::atomic<int> next{0};
  std::atomic<int> skipped{0};
  auto worker = [&](int w) {
    for (;;) {
      const int i = next.fetch_add(1);
      if (i >= n) return;
      if (stop && stop()) {
        skipped.fetch_add(1);
        continue;
      }
      fn(i, w);
    }
  };
  const int extra = std::max(0, std::min(threads, n) - 1);
  std::vector<std::thread> pool;
  pool.reserve(extra);
  for (int t = 0; t < extra; ++t) pool.emplace_back(worker, t + 1);
  worker(0);
  for (std::thread& t : pool) t.join();
  return skipped.load();
}

inline int parallel_for(int n, int threads, const std::function<void(int)>& fn,
                        const std::function<bool()>& stop = {}) {
  return parallel_for_workers(n, threads, [&](int i, int) { fn(i); }, stop);
}

}  // namespace ps::tuner_detail
