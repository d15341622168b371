#include "runtime/rendezvous.h"

#include <fmt/format.h>

#include "runtime/backend.h"

namespace ps::rt {

RendezvousHub::RendezvousHub(int devices) : devices_(devices) {
  for (int i = 0; i < devices * devices; ++i) channels_.push_back(std::make_unique<Channel>());
}

RendezvousHub::Channel& RendezvousHub::channel(int from, int to) {
  PS_ASSERT(from >= 0 && from < devices_ && to >= 0 && to < devices_, "device out of range");
  return *channels_[static_cast<size_t>(from) * devices_ + to];
}

Status RendezvousHub::send(int from, int to, const Action& op, const float* data, size_t count) {
  Channel& c = channel(from, to);
  std::unique_lock<std::mutex> lock(c.mu);
  // One comm stream per device: a previous send on this pair has completed before this one starts.
  c.cv.wait(lock, [&] { return !c.offered || aborted_.load(); });
  if (aborted_.load()) return aborted_status();
  c.offered = true;
  c.taken = false;
  c.op = op;
  c.data = data;
  c.count = count;
  c.cv.notify_all();
  c.cv.wait(lock, [&] { return c.taken || aborted_.load(); });
  const bool ok = c.taken;
  c.offered = false;
  c.taken = false;
  c.data = nullptr;
  c.cv.notify_all();
  return ok ? Status::ok() : aborted_status();
}

Status RendezvousHub::recv(int from, int to, const Take& take) {
  Channel& c = channel(from, to);
  std::unique_lock<std::mutex> lock(c.mu);
  c.cv.wait(lock, [&] { return (c.offered && !c.taken) || aborted_.load(); });
  if (aborted_.load()) return aborted_status();
  Status st = take(c.op, c.data, c.count);
  if (!st.is_ok()) return st;  // the sender stays blocked; the executor aborts everyone
  c.taken = true;
  c.cv.notify_all();
  return Status::ok();
}

void RendezvousHub::abort() {
  aborted_.store(true);
  for (auto& c : channels_) {
    std::lock_guard<std::mutex> lock(c->mu);
    c->cv.notify_all();
  }
}

void RendezvousHub::reset() {
  for (auto& c : channels_) {
    std::lock_guard<std::mutex> lock(c->mu);
    c->offered = false;
    c->taken = false;
    c->data = nullptr;
  }
  aborted_.store(false);
}

}  // namespace ps::rt
