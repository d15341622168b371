// rendezvous.h — in-memory point-to-point channels with rendezvous semantics (capacity 0).
//
// Guarantees: one channel per ordered device pair; a send completes only when the receiver has taken
// (copied) the data — a SEND blocks until then (send), or is posted and waited for later (post +
// wait: what a comm group of the grouped semantics does); messages between a pair are matched in
// posting order (like NCCL), and the receiver checks that the sender's op is the one it expects,
// reporting a mismatch instead of taking the wrong tensor. abort() wakes every blocked party with
// kRuntime "aborted".
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
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

  struct Offer {
    Action op;
    const float* data = nullptr;
    size_t count = 0;
    bool taken = false;
    int from = 0, to = 0;
  };
  using Ticket = std::shared_ptr<Offer>;

  // Offers `count` floats at `data` from `from` to `to`, tagged with the SEND op; blocks until taken.
  Status send(int from, int to, const Action& op, const float* data, size_t count);
  // Posts the offer without waiting (the data must stay valid until wait() returns).
  Ticket post(int from, int to, const Action& op, const float* data, size_t count);
  // Waits until a posted offer has been taken.
  Status wait(const Ticket& t);
  // Withdraws a posted offer that has not been taken (after a failure); no-op if it was taken.
  void cancel(const Ticket& t);
  // Called by a receiver while the matching sender waits: gets the sender's op and its data.
  using Take = std::function<Status(const Action& sent, const float* data, size_t count)>;
  // Waits for the oldest untaken offer from `from` to `to` and hands it to `take` (the sender keeps
  // waiting until `take` has returned ok).
  Status recv(int from, int to, const Take& take);

  void abort();
  void reset();  // clears the abort flag and any stale offer (between iterations)
  bool aborted() const { return aborted_.load(); }

 private:
  struct Channel {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Ticket> offers;  // posting order
  };
  Channel& channel(int from, int to);

  int devices_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::atomic<bool> aborted_{false};
};

}  // namespace ps::rt
