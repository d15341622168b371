// rendezvous.h — in-memory point-to-point channels with rendezvous semantics (capacity 0).
//
// Guarantees: one channel per ordered device pair; a send completes only when the receiver has taken
// (copied) the data — the sender blocks until then; messages between a pair are matched in issue
// order (like NCCL), and the receiver checks the sender's op is the one it expects, reporting a
// mismatch instead of taking the wrong tensor. abort() wakes every blocked party with kRuntime.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "ir/schedule.h"
#include "ir/status.h"

namespace ps::rt {

class RendezvousHub {
 public:
  explicit RendezvousHub(int devices);

  // Offers `count` floats at `data` from `from` to `to`, tagged with the SEND op; blocks until taken.
  Status send(int from, int to, const Action& op, const float* data, size_t count);
  // Called by a receiver while the matching sender is blocked: gets the sender's op and its data.
  using Take = std::function<Status(const Action& sent, const float* data, size_t count)>;
  // Waits for a message from `from` to `to` and hands it to `take` (the sender stays blocked until
  // `take` has returned ok).
  Status recv(int from, int to, const Take& take);

  void abort();
  void reset();  // clears the abort flag and any stale offer (between iterations)
  bool aborted() const { return aborted_.load(); }

 private:
  struct Channel {
    std::mutex mu;
    std::condition_variable cv;
    bool offered = false;
    bool taken = false;
    Action op;
    const float* data = nullptr;
    size_t count = 0;
  };
  Channel& channel(int from, int to);

  int devices_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::atomic<bool> aborted_{false};
};

}  // namespace ps::rt
