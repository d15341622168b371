#include "runtime/rendezvous.h"

#include "runtime/backend.h"

namespace ps::rt {

RendezvousHub::RendezvousHub(int devices) : devices_(devices) {
  for (int i = 0; i < devices * devices; ++i) channels_.push_back(std::make_unique<Channel>());
}

RendezvousHub::Channel& RendezvousHub::channel(int from, int to) {
  PS_ASSERT(from >= 0 && from < devices_ && to >= 0 && to < devices_, "device out of range");
  return *channels_[static_cast<size_t>(from) * devices_ + to];
}

RendezvousHub::Ticket RendezvousHub::post(int from, int to, const Action& op, const float* data, size_t count) {
  auto t = std::make_shared<Offer>();
  t->op = op;
  t->data = data;
  t->count = count;
  t->from = from;
  t->to = to;
  Channel& c = channel(from, to);
  std::lock_guard<std::mutex> lock(c.mu);
  c.offers.push_back(t);
  c.cv.notify_all();
  return t;
}

Status RendezvousHub::wait(const Ticket& t) {
  Channel& c = channel(t->from, t->to);
  std::unique_lock<std::mutex> lock(c.mu);
  c.cv.wait(lock, [&] { return t->taken || aborted_.load(); });
  if (t->taken) return Status::ok();
  lock.unlock();
  cancel(t);  // aborted before the receiver took it: withdraw the offer (its data is about to go away)
  return aborted_status();
}

void RendezvousHub::cancel(const Ticket& t) {
  Channel& c = channel(t->from, t->to);
  std::lock_guard<std::mutex> lock(c.mu);
  if (t->taken) return;
  for (auto it = c.offers.begin(); it != c.offers.end(); ++it)
    if (*it == t) {
      c.offers.erase(it);
      break;
    }
}

Status RendezvousHub::send(int from, int to, const Action& op, const float* data, size_t count) {
  if (aborted_.load()) return aborted_status();
  return wait(post(from, to, op, data, count));
}

Status RendezvousHub::recv(int from, int to, const Take& take) {
  Channel& c = channel(from, to);
  std::unique_lock<std::mutex> lock(c.mu);
  c.cv.wait(lock, [&] { return !c.offers.empty() || aborted_.load(); });
  if (aborted_.load()) return aborted_status();
  Ticket t = c.offers.front();
  Status st = take(t->op, t->data, t->count);
  if (!st.is_ok()) return st;  // the sender keeps waiting; the executor aborts everyone
  c.offers.pop_front();
  t->taken = true;
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
    c->offers.clear();
  }
  aborted_.store(false);
}

}  // namespace ps::rt
