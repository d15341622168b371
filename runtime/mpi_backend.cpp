// mpi_backend.cpp — see mpi_backend.h.
#include "runtime/mpi_backend.h"

#include <fmt/format.h>

#include "runtime/executor.h"
#include "runtime/mpi_world.h"

#if defined(PIPESMITH_HAVE_MPI)
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "runtime/host_ops.h"
#endif

namespace ps::rt {

#if defined(PIPESMITH_HAVE_MPI)

namespace {

using MpiClock = std::chrono::steady_clock;

Status mpi_runtime_error(std::string msg) { return Status::error(ErrorCode::kRuntime, std::move(msg)); }

// PIPESMITH_TEST_KILL=RANK:OPS (tests only): that rank raises SIGKILL after OPS ops.
std::pair<int, int> test_kill_point() {
  const char* v = std::getenv("PIPESMITH_TEST_KILL");
  int rank = -1, ops = -1;
  if (v == nullptr || std::sscanf(v, "%d:%d", &rank, &ops) != 2) return {-1, -1};
  return {rank, ops};
}

class MpiBackend final : public Backend {
 public:
  MpiBackend(MpiWorld& world, MPI_Comm comm, const MpiBackendOptions& o)
      : world_(world), comm_(comm), options_(o), ops_(fmt::format("mpi:{}", world.rank())),
        kill_(test_kill_point()), epoch_(MpiClock::now()) {}
  ~MpiBackend() override = default;

  // ---- Backend ----
  std::string name() const override { return "mpi"; }
  int num_devices() const override { return options_.devices; }
  std::vector<int> local_devices() const override { return {world_.rank()}; }
  DeviceContext& device(int d) override;
  Status begin_iteration() override {
    watch_ = std::make_unique<MpiWorld::Watch>();
    PS_RETURN_IF_ERROR(world_.barrier(options_.control_timeout_s, "the barrier at the start of the iteration"));
    times_.clear();
    ops_done_ = 0;
    aborted_.store(false);
    epoch_ = MpiClock::now();
    return Status::ok();
  }
  void abort_all() override { aborted_.store(true); }
  int rank() const override { return world_.rank(); }
  int processes() const override { return world_.size(); }
  std::string process_label() const override { return world_.label(); }
  Status agree_on_inputs(const std::vector<std::pair<std::string, std::string>>& digests) override {
    return rt::agree_on_inputs(world_, digests, options_.control_timeout_s);
  }
  Status health() override { return world_.health(); }
  void announce_stop(const std::string& reason) override { world_.stop(reason); }
  Status gather_results(ExecResult& result) override {
    Status st = gather_exec_results(world_, result, options_.control_timeout_s);
    watch_.reset();
    return st;
  }

  // ---- the device of this rank ----
  class Device;

 private:
  friend class Device;
  int tag_of(const Action& send) const {
    return (send.stage.value() * options_.microbatches + send.mb.value()) * 2 + (send.type == OpType::SEND_B ? 1 : 0);
  }
  Action action_of(int tag) const {
    Action a;
    a.type = tag % 2 ? OpType::SEND_B : OpType::SEND_F;
    a.stage = StageId{(tag / 2) / options_.microbatches};
    a.mb = MicrobatchId{(tag / 2) % options_.microbatches};
    return a;
  }
  double now_ms() const { return std::chrono::duration<double, std::milli>(MpiClock::now() - epoch_).count(); }
  // Polls a request; on abort the request stays pending and `keep` stays alive until exit.
  Status wait(MPI_Request& req, const Tensor& keep, const char* what);
  // RECV: the peer's next message, checked against the expected SEND and size.
  Result<Tensor> receive(const Action& op, int peer, const Action& expected_send, size_t count);

  MpiWorld& world_;
  MPI_Comm comm_;  // data plane (a duplicate of MPI_COMM_WORLD)
  MpiBackendOptions options_;
  HostOps ops_;
  std::pair<int, int> kill_;
  std::unique_ptr<MpiWorld::Watch> watch_;
  std::atomic<bool> aborted_{false};
  MpiClock::time_point epoch_;
  std::vector<OpSpan> times_;
  int ops_done_ = 0;
  std::mutex left_mu_;
  std::vector<Tensor> left_behind_;  // buffers of sends an abort left pending
  std::unique_ptr<Device> device_;
};

Status MpiBackend::wait(MPI_Request& req, const Tensor& keep, const char* what) {
  for (int spins = 0;; ++spins) {
    int done = 0;
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return mpi_runtime_error(fmt::format("MPI_Test of a {} failed", what));
    if (done) return Status::ok();
    if (aborted_.load()) {
      std::lock_guard<std::mutex> lock(left_mu_);
      left_behind_.push_back(keep);
      return aborted_status();
    }
    if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Result<Tensor> MpiBackend::receive(const Action& op, int peer, const Action& expected_send, size_t count) {
  MPI_Message msg = MPI_MESSAGE_NULL;
  MPI_Status st;
  for (int spins = 0;; ++spins) {
    int flag = 0;
    if (MPI_Improbe(peer, MPI_ANY_TAG, comm_, &flag, &msg, &st) != MPI_SUCCESS)
      return mpi_runtime_error("MPI_Improbe failed");
    if (flag) break;
    if (aborted_.load()) return aborted_status();
    if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  const Action sent = action_of(st.MPI_TAG);
  const int me = world_.rank();
  if (!(sent == expected_send))
    return mpi_runtime_error(
        fmt::format("'{}' on device {} expected the tensor of '{}' from device {}, but device {} sent '{}' first "
                    "(sends and receives between two devices are matched in order)",
                    to_string(op), me, to_string(expected_send), peer, peer, to_string(sent)));
  int n = 0;
  MPI_Get_count(&st, MPI_FLOAT, &n);
  if (n < 0 || static_cast<size_t>(n) != count)
    return mpi_runtime_error(fmt::format("'{}' on device {} expected {} elements from '{}', got {}", to_string(op), me,
                                         count, to_string(sent), n));
  Tensor out = ops_.alloc(count, DType::kF32);
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Imrecv(out.f32(), n, MPI_FLOAT, &msg, &req) != MPI_SUCCESS) return mpi_runtime_error("MPI_Imrecv failed");
  PS_RETURN_IF_ERROR(wait(req, out, "receive"));
  return out;
}

class MpiBackend::Device final : public DeviceContext {
 public:
  explicit Device(MpiBackend& b) : b_(b) {}
  Ops& ops() override { return b_.ops_; }
  void begin_op(int index, const Action&) override {
    if (static_cast<size_t>(index) >= b_.times_.size()) b_.times_.resize(index + 1);
    b_.times_[index].start_ms = b_.now_ms();
  }
  void end_op(int index, const Action&) override {
    b_.times_[index].end_ms = b_.now_ms();
    if (++b_.ops_done_ == b_.kill_.second && b_.kill_.first == b_.world_.rank()) {
      std::fprintf(stderr, "pipesmith: %s: raising SIGKILL after %d ops (PIPESMITH_TEST_KILL)\n",
                   b_.world_.label().c_str(), b_.ops_done_);
      std::fflush(stderr);
      raise(SIGKILL);
    }
  }
  Status send(const Action& op, int peer, const Tensor& t, const Action&) override {
    if (b_.aborted_.load()) return aborted_status();
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Issend(t.f32(), static_cast<int>(t.count()), MPI_FLOAT, peer, b_.tag_of(op), b_.comm_, &req) != MPI_SUCCESS)
      return mpi_runtime_error(fmt::format("MPI_Issend of '{}' failed", to_string(op)));
    return b_.wait(req, t, "send");
  }
  Result<Tensor> recv(const Action& op, int peer, const Action& expected_send, size_t count) override {
    return b_.receive(op, peer, expected_send, count);
  }
  Status run_group(std::vector<CommItem>& items, std::atomic<int>& current) override {
    std::vector<std::pair<CommItem*, MPI_Request>> posted;
    Status st;
    for (CommItem& it : items) {
      if (!is_send(it.op.type)) continue;
      current.store(it.index);
      MPI_Request req = MPI_REQUEST_NULL;
      if (MPI_Issend(it.send.f32(), static_cast<int>(it.send.count()), MPI_FLOAT, it.peer, b_.tag_of(it.op), b_.comm_,
                     &req) != MPI_SUCCESS) {
        st = mpi_runtime_error(fmt::format("MPI_Issend of '{}' failed", to_string(it.op)));
        break;
      }
      posted.emplace_back(&it, req);
    }
    for (CommItem& it : items) {
      if (!st.is_ok()) break;
      if (!is_recv(it.op.type)) continue;
      current.store(it.index);
      auto t = b_.receive(it.op, it.peer, it.expected, it.count);
      if (!t.ok()) {
        st = t.status();
        break;
      }
      it.received = std::move(*t);
    }
    // Every posted send is waited for; after a failure it is left pending with its buffer kept.
    for (auto& [it, req] : posted) {
      if (!st.is_ok()) {
        std::lock_guard<std::mutex> lock(b_.left_mu_);
        b_.left_behind_.push_back(it->send);
        continue;
      }
      current.store(it->index);
      st = b_.wait(req, it->send, "send");
    }
    return st;
  }
  bool is_async() const override { return false; }
  Status finish() override { return Status::ok(); }
  int completed_ops() const override { return 0; }
  std::vector<OpSpan> op_times() override { return b_.times_; }
  void abort() override { b_.aborted_.store(true); }
  std::string describe() const override {
    return fmt::format("mpi rank {}/{} pid {}", b_.world_.rank(), b_.world_.size(), static_cast<long>(getpid()));
  }

 private:
  MpiBackend& b_;
};

DeviceContext& MpiBackend::device(int d) {
  PS_ASSERT(d == world_.rank(), "the mpi backend runs only this rank's device");
  if (!device_) device_ = std::make_unique<Device>(*this);
  return *device_;
}

}  // namespace

Result<std::unique_ptr<Backend>> make_mpi_backend(const MpiBackendOptions& o) {
  auto world = MpiWorld::get();
  if (!world) return world.status();
  MpiWorld& w = **world;
  if (w.size() != o.devices)
    return Status::bad_input(fmt::format(
        "the mpi backend: {} process{} launched, but the schedule has {} devices: run one process per device "
        "(an MPI launcher with {} processes, e.g. mpirun -np {})",
        w.size(), w.size() == 1 ? " was" : "es were", o.devices, o.devices, o.devices));
  void* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  const long long max_tag = 2LL * o.stages * o.microbatches + 1;
  if (flag && ub != nullptr && max_tag > *static_cast<int*>(ub))
    return Status::bad_input(fmt::format("the mpi backend: {} stages x {} microbatches need message tags up to {}, more "
                                         "than this MPI's MPI_TAG_UB {}",
                                         o.stages, o.microbatches, max_tag, *static_cast<int*>(ub)));
  MPI_Comm comm = MPI_COMM_NULL;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) return mpi_runtime_error("MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<Backend>(new MpiBackend(w, comm, o));
}

#else  // !PIPESMITH_HAVE_MPI

Result<std::unique_ptr<Backend>> make_mpi_backend(const MpiBackendOptions&) {
  return Status::error(ErrorCode::kRuntime,
                       "built without the mpi backend (MPI was not found, or PIPESMITH_MPI was OFF, when pipesmith "
                       "was configured; "
                       "install libopenmpi-dev and rebuild); the host backend needs no MPI");
}

#endif

}  // namespace ps::rt
