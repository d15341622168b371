// counted_storage.h — an Ops' allocation footprint (runtime/ops.h: live_bytes, peak_bytes) and the
// Storage base that keeps it, for every backend's Ops (runtime/host_ops.h, kernels/cuda_ops.h).
//
// Guarantees: a CountedStorage's bytes count as live from its construction until its destructor has
// run (after the backend's own destructor has returned the memory); the counters are shared with
// every storage (a tensor may outlive its Ops) and atomic, so another thread may read them.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

#include "runtime/tensor.h"

namespace ps::rt {

class AllocCounters {
 public:
  size_t live() const { return live_.load(); }
  size_t peak() const { return peak_.load(); }
  void allocated(size_t bytes) {
    const size_t live = live_.fetch_add(bytes) + bytes;
    size_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
  }
  void freed(size_t bytes) { live_.fetch_sub(bytes); }

 private:
  std::atomic<size_t> live_{0};
  std::atomic<size_t> peak_{0};
};

class CountedStorage : public Storage {
 public:
  CountedStorage(void* ptr, size_t bytes, std::shared_ptr<AllocCounters> counters)
      : Storage(ptr, bytes), counters_(std::move(counters)) {
    counters_->allocated(bytes);
  }
  ~CountedStorage() override { counters_->freed(bytes()); }

 private:
  std::shared_ptr<AllocCounters> counters_;
};

}  // namespace ps::rt
