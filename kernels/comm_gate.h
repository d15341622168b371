// comm_gate.h — how a worker and the watchdog share one communicator (the cuda backend's NCCL
// communicator; host-only code, no CUDA needed).
//
// Guarantees:
//  * The gate's mutex is held only for the duration of one short library call (an enqueue on a
//    non-blocking communicator, one async-error query, the abort itself) — never while a worker
//    polls or sleeps. So abort() from the watchdog runs within one such call of a worker that is
//    blocked waiting for a transfer, instead of waiting for the transfer.
//  * After abort() has run its abort function, no call() or settle() poll reaches the
//    communicator again (they return the aborted status): a call cannot race with the abort and
//    touch a destroyed communicator.
//  * settle() returns as soon as the poll reports done or an error, or the gate is aborted or an
//    abort was requested (request_abort(): a flag the worker sees at its next poll).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include "ir/status.h"
#include "runtime/backend.h"

namespace ps::kern {

class CommGate {
 public:
  // Runs `f` (returns Status) under the gate unless it was aborted.
  template <class F>
  Status call(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return rt::aborted_status();
    return std::forward<F>(f)();
  }

  // Polls until `poll` (under the gate; returns Result<bool>: true = done) says done, fails, or the
  // gate is aborted / an abort is requested. Sleeps `pause` between polls, outside the gate.
  template <class Poll>
  Status settle(Poll&& poll, std::chrono::microseconds pause = std::chrono::microseconds(20)) {
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (aborted_) return rt::aborted_status();
        Result<bool> done = poll();
        if (!done.ok()) return done.status();
        if (*done) return Status::ok();
      }
      if (abort_requested_.load()) return rt::aborted_status();
      std::this_thread::sleep_for(pause);
    }
  }

  // Runs `abort_fn` once (the first call), under the gate; later calls do nothing.
  template <class F>
  void abort(F&& abort_fn) {
    abort_requested_.store(true);
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;
    aborted_ = true;
    std::forward<F>(abort_fn)();
  }

  // Marks the communicator gone without an abort call (after a clean finalize).
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
  }

  void request_abort() { abort_requested_.store(true); }
  void clear_request() { abort_requested_.store(false); }
  bool abort_requested() const { return abort_requested_.load(); }
  bool aborted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_;
  }

 private:
  mutable std::mutex mu_;
  bool aborted_ = false;
  std::atomic<bool> abort_requested_{false};
};

}  // namespace ps::kern
