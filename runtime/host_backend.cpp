#include "runtime/host_backend.h"

#include <fmt/format.h>

#include <algorithm>

namespace ps::rt {

class HostBackend::Device final : public DeviceContext {
 public:
  Device(HostBackend& owner, int id) : owner_(owner), id_(id), ops_(fmt::format("host:{}", id)) {}

  Ops& ops() override { return ops_; }

  void begin_op(int index, const Action&) override {
    if (static_cast<size_t>(index) >= times_.size()) times_.resize(index + 1);
    times_[index].start_ms = now_ms();
  }
  void end_op(int index, const Action&) override { times_[index].end_ms = now_ms(); }

  Status send(const Action& op, int peer, const Tensor& t, const Action&) override {
    return owner_.hub_.send(id_, peer, op, t.f32(), t.count());
  }

  Result<Tensor> recv(const Action& op, int peer, const Action& expected_send, size_t count) override {
    Tensor out;
    Status st = owner_.hub_.recv(peer, id_, [&](const Action& sent, const float* data, size_t n) {
      if (!(sent == expected_send))
        return Status::error(
            ErrorCode::kRuntime,
            fmt::format("'{}' on device {} expected the tensor of '{}' from device {}, but device {} sent "
                        "'{}' first (sends and receives between two devices are matched in order)",
                        to_string(op), id_, to_string(expected_send), peer, peer, to_string(sent)));
      if (n != count)
        return Status::error(ErrorCode::kRuntime,
                             fmt::format("'{}' on device {} expected {} elements from '{}', got {}", to_string(op),
                                         id_, count, to_string(sent), n));
      out = ops_.alloc(n, DType::kF32);
      std::copy(data, data + n, out.f32());
      return Status::ok();
    });
    if (!st.is_ok()) return st;
    return out;
  }

  Status run_group(std::vector<CommItem>& items, std::atomic<int>& current) override {
    std::vector<std::pair<int, RendezvousHub::Ticket>> posted;
    for (CommItem& it : items)
      if (is_send(it.op.type)) {
        current.store(it.index);
        posted.emplace_back(it.index, owner_.hub_.post(id_, it.peer, it.op, it.send.f32(), it.send.count()));
      }
    Status st;
    for (CommItem& it : items) {
      if (!is_recv(it.op.type)) continue;
      current.store(it.index);
      auto t = recv(it.op, it.peer, it.expected, it.count);
      if (!t.ok()) {
        st = t.status();
        break;
      }
      it.received = std::move(*t);
    }
    // Every posted offer is waited for, or withdrawn after a failure, before its data may go away.
    for (auto& [index, ticket] : posted) {
      if (!st.is_ok()) {
        owner_.hub_.cancel(ticket);
        continue;
      }
      current.store(index);
      st = owner_.hub_.wait(ticket);
    }
    return st;
  }

  bool is_async() const override { return false; }
  Status finish() override { return Status::ok(); }
  int completed_ops() const override { return 0; }
  std::vector<OpSpan> op_times() override { return times_; }
  void abort() override { owner_.hub_.abort(); }
  std::string describe() const override { return fmt::format("host thread {}", id_); }

  void reset() { times_.clear(); }

 private:
  double now_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - owner_.epoch_).count();
  }
  HostBackend& owner_;
  int id_;
  HostOps ops_;
  std::vector<OpSpan> times_;
};

HostBackend::HostBackend(int devices) : devices_(devices), hub_(devices), epoch_(std::chrono::steady_clock::now()) {
  for (int d = 0; d < devices; ++d) contexts_.push_back(std::make_unique<Device>(*this, d));
}

HostBackend::~HostBackend() = default;

std::vector<int> HostBackend::local_devices() const {
  std::vector<int> v(devices_);
  for (int d = 0; d < devices_; ++d) v[d] = d;
  return v;
}

DeviceContext& HostBackend::device(int d) {
  PS_ASSERT(d >= 0 && d < devices_, "device out of range");
  return *contexts_[d];
}

Status HostBackend::begin_iteration() {
  hub_.reset();
  for (auto& c : contexts_) c->reset();
  epoch_ = std::chrono::steady_clock::now();
  return Status::ok();
}

}  // namespace ps::rt
