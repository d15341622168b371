// host_backend.h — the host backend: one thread per device (the executor's workers), CPU math
// (HostOps), rendezvous channels for SEND/RECV, wall-clock op timing.
//
// Guarantees: synchronous (an op has finished when end_op is called); a SEND returns only when the
// peer's RECV has copied the data; a RECV checks that the arriving tensor comes from the expected
// SEND (same op) and has the expected size, and fails with both ops named otherwise.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "runtime/backend.h"
#include "runtime/host_ops.h"
#include "runtime/rendezvous.h"

namespace ps::rt {

class HostBackend final : public Backend {
 public:
  explicit HostBackend(int devices);
  ~HostBackend() override;

  std::string name() const override { return "host"; }
  int num_devices() const override { return devices_; }
  std::vector<int> local_devices() const override;
  DeviceContext& device(int d) override;
  Status begin_iteration() override;
  void abort_all() override { hub_.abort(); }

 private:
  class Device;
  int devices_;
  RendezvousHub hub_;
  std::chrono::steady_clock::time_point epoch_;
  std::vector<std::unique_ptr<Device>> contexts_;
};

}  // namespace ps::rt
