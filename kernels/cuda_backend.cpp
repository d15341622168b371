// cuda_backend.cpp — see cuda_backend.h. Host-side code (compiled by the C++ compiler); the kernels
// are in kernels/*.cu, the math in kernels/cuda_ops.cpp.
#if defined(PIPESMITH_HAVE_CUDA)
#include "kernels/cuda_backend.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "ir/output_file.h"
#include "kernels/comm_gate.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_ops.h"
#include "runtime/mpi_world.h"

namespace ps::kern {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInitTimeoutS = 120;

Status runtime_error(std::string msg) { return Status::error(ErrorCode::kRuntime, std::move(msg)); }

// ---- the ncclUniqueId bootstrap ----

std::string id_to_hex(const ncclUniqueId& id) {
  std::string s;
  for (size_t i = 0; i < sizeof(id.internal); ++i)
    s += fmt::format("{:02x}", static_cast<unsigned>(static_cast<unsigned char>(id.internal[i])));
  return s;
}

Result<ncclUniqueId> id_from_hex(const std::string& hex, const std::string& where) {
  ncclUniqueId id{};
  std::string h;
  for (char c : hex)
    if (!std::isspace(static_cast<unsigned char>(c))) h += c;
  if (h.size() != 2 * sizeof(id.internal))
    return runtime_error(fmt::format("{}: expected {} hex digits of an ncclUniqueId, got {}", where,
                                     2 * sizeof(id.internal), h.size()));
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    unsigned v = 0;
    if (std::sscanf(h.c_str() + 2 * i, "%2x", &v) != 1)
      return runtime_error(fmt::format("{}: not hex at position {}", where, 2 * i));
    id.internal[i] = static_cast<char>(v);
  }
  return id;
}

// The id every rank uses: PIPESMITH_NCCL_ID, else --nccl-id-file, else rank 0's broadcast over MPI
// (the nccl-tests convention) when an MPI launcher started the processes.
Result<ncclUniqueId> shared_unique_id(const rt::LaunchEnv& env, const std::string& file, rt::MpiWorld* world) {
  if (const char* hex = std::getenv("PIPESMITH_NCCL_ID"); hex && *hex) return id_from_hex(hex, "PIPESMITH_NCCL_ID");
  if (file.empty() && world != nullptr) {
    ncclUniqueId id{};
    if (world->rank() == 0) PS_NCCL_RETURN(ncclGetUniqueId(&id));
    auto hex = world->broadcast(world->rank() == 0 ? id_to_hex(id) : std::string(), kInitTimeoutS,
                                "the ncclUniqueId broadcast");
    if (!hex) return hex.status();
    return id_from_hex(*hex, "the ncclUniqueId broadcast from rank 0");
  }
  if (file.empty())
    return runtime_error(fmt::format(
        "rank {} of {}: multi-process mode needs an NCCL id file (CudaBackendOptions::nccl_id_file: a fresh path per "
        "job on a file system all ranks see), PIPESMITH_NCCL_ID (an ncclUniqueId in hex, the same for every rank) or an MPI "
        "launcher (mpirun, with pipesmith built with MPI: rank 0 broadcasts the id)",
        env.rank, env.world));
  if (env.rank == 0) {
    ncclUniqueId id{};
    PS_NCCL_RETURN(ncclGetUniqueId(&id));
    // Whole or not at all: the other ranks poll for the file and read it as soon as it appears.
    if (Status st = write_output_file(file, id_to_hex(id) + "\n"); !st.is_ok()) return runtime_error(st.message());
    return id;
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(kInitTimeoutS);
  while (Clock::now() < deadline) {
    std::ifstream in(file);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str().size() >= 2 * sizeof(ncclUniqueId::internal)) return id_from_hex(ss.str(), file);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return runtime_error(fmt::format("rank {}: '{}' did not appear within {:g} s (rank 0 writes it)", env.rank, file,
                                   kInitTimeoutS));
}

// Waits until a non-blocking communicator has no operation in progress.
Status wait_comm(ncclComm_t comm, double timeout_s, const char* what) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    ncclResult_t st = ncclInProgress;
    PS_NCCL_RETURN(ncclCommGetAsyncError(comm, &st));
    if (st == ncclSuccess) return Status::ok();
    if (st != ncclInProgress) return PS_NCCL(st);
    if (Clock::now() > deadline) return runtime_error(fmt::format("{} did not complete within {:g} s", what, timeout_s));
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

Status wait_stream(cudaStream_t s, double timeout_s, const char* what) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return Status::ok();
    if (e != cudaErrorNotReady) return PS_CUDA(e);
    if (Clock::now() > deadline) return runtime_error(fmt::format("{} did not complete within {:g} s", what, timeout_s));
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// ---- one device ----

class CudaDevice final : public rt::DeviceContext {
 public:
  CudaDevice(int device, int rank_world, std::unique_ptr<CudaOps> ops)
      : device_(device), world_(rank_world), ops_(std::move(ops)) {}
  ~CudaDevice() override { shutdown(); }

  Status init_streams() {
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    PS_CUDA_RETURN(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
    PS_CUDA_RETURN(cudaEventCreate(&epoch_));
    return Status::ok();
  }
  void set_comm(ncclComm_t c) { comm_ = c; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t comm_stream() const { return comm_stream_; }
  CudaOps& cuda_ops() { return *ops_; }

  // Records the iteration's epoch on both streams and clears per-iteration state.
  Status reset() {
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    PS_RETURN_IF_ERROR(ops_->status());
    if (aborted()) return runtime_error(fmt::format("device {}: the communicator was aborted", device_));
    PS_CUDA_RETURN(cudaEventRecord(epoch_, ops_->stream()));
    PS_CUDA_RETURN(cudaStreamWaitEvent(comm_stream_, epoch_, 0));
    produced_.clear();
    kinds_.clear();
    std::lock_guard<std::mutex> lock(events_mu_);
    enqueued_ = 0;
    completed_.store(0);
    gate_.clear_request();
    return Status::ok();
  }

  rt::Ops& ops() override { return *ops_; }

  void begin_op(int index, const Action& a) override {
    check(PS_CUDA(cudaSetDevice(ops_->gpu())));
    if (!ensure_events(index)) return;
    const bool comm = is_comm(a.type);
    cudaStream_t s = comm ? comm_stream_ : ops_->stream();
    kinds_.resize(index + 1);
    kinds_[index] = comm;
    // Exactly the waits of ir/schedule.h: a compute waits for the RECV of its input, a SEND for its
    // producing compute; everything else is ordered by its own stream.
    auto wait = [&](OpType t, int stage) {
      auto it = produced_.find({t, stage, a.mb.value()});
      if (it != produced_.end()) check(PS_CUDA(cudaStreamWaitEvent(s, end_[it->second], 0)));
    };
    switch (a.type) {
      case OpType::F: wait(OpType::RECV_F, a.stage.value()); break;
      case OpType::I:
      case OpType::B: wait(OpType::RECV_B, a.stage.value()); break;
      case OpType::SEND_F: wait(OpType::F, a.stage.value()); break;
      case OpType::SEND_B:
        wait(OpType::I, a.stage.value());
        wait(OpType::B, a.stage.value());
        break;
      default: break;
    }
    check(PS_CUDA(cudaEventRecord(start_[index], s)));
  }

  void end_op(int index, const Action& a) override {
    if (index >= static_cast<int>(end_.size())) return;
    check(PS_CUDA(cudaEventRecord(end_[index], kinds_[index] ? comm_stream_ : ops_->stream())));
    if (a.type != OpType::W && a.type != OpType::SEND_F && a.type != OpType::SEND_B)
      produced_[{a.type, a.stage.value(), a.mb.value()}] = index;
    std::lock_guard<std::mutex> lock(events_mu_);
    enqueued_ = index + 1;
  }

  Status send(const Action& op, int peer, const rt::Tensor& t, const Action&) override {
    if (t.empty()) return runtime_error(fmt::format("'{}': nothing to send", to_string(op)));
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    PS_RETURN_IF_ERROR(
        gate_.call([&] { return PS_NCCL(ncclSend(t.f32(), t.count(), ncclFloat, peer, comm_, comm_stream_)); }));
    PS_RETURN_IF_ERROR(settle(to_string(op)));
    CudaOps::set_free_stream(t, comm_stream_);  // freed after the send, on its stream
    return Status::ok();
  }

  Result<rt::Tensor> recv(const Action& op, int peer, const Action&, size_t count) override {
    rt::Tensor t = ops_->alloc_on(count, rt::DType::kF32, comm_stream_);
    PS_RETURN_IF_ERROR(ops_->status());
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    PS_RETURN_IF_ERROR(
        gate_.call([&] { return PS_NCCL(ncclRecv(t.f32(), count, ncclFloat, peer, comm_, comm_stream_)); }));
    PS_RETURN_IF_ERROR(settle(to_string(op)));
    return t;
  }

  // Grouped semantics: one NCCL group on the comm stream (the sends' producers were waited for in
  // begin_op); it completes as a unit.
  Status run_group(std::vector<rt::CommItem>& items, std::atomic<int>& current) override {
    for (rt::CommItem& it : items) {
      if (!is_recv(it.op.type)) continue;
      it.received = ops_->alloc_on(it.count, rt::DType::kF32, comm_stream_);
      PS_RETURN_IF_ERROR(ops_->status());
    }
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    if (!items.empty()) current.store(items.front().index);
    // The group is enqueued under the gate (non-blocking calls), then waited for outside it.
    PS_RETURN_IF_ERROR(gate_.call([&] {
      PS_NCCL_RETURN(ncclGroupStart());
      Status st;
      for (rt::CommItem& it : items) {
        if (!st.is_ok()) break;
        if (is_send(it.op.type))
          st = PS_NCCL(ncclSend(it.send.f32(), it.send.count(), ncclFloat, it.peer, comm_, comm_stream_));
        else
          st = PS_NCCL(ncclRecv(it.received.f32(), it.count, ncclFloat, it.peer, comm_, comm_stream_));
      }
      Status end = PS_NCCL(ncclGroupEnd());
      PS_RETURN_IF_ERROR(st);
      return end;
    }));
    PS_RETURN_IF_ERROR(settle("comm group"));
    for (rt::CommItem& it : items)
      if (is_send(it.op.type)) CudaOps::set_free_stream(it.send, comm_stream_);
    return Status::ok();
  }

  bool is_async() const override { return true; }

  Status finish() override {
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    const int n = enqueued_;
    for (int i = 0; i < n; ++i) {
      while (true) {
        const cudaError_t e = cudaEventQuery(end_[i]);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) return PS_CUDA(e);
        if (gate_.abort_requested() || gate_.aborted()) {
          abort_comm();
          return rt::aborted_status();
        }
        Status async = gate_.call([&] {
          ncclResult_t st = ncclSuccess;
          PS_NCCL_RETURN(ncclCommGetAsyncError(comm_, &st));
          if (st != ncclSuccess && st != ncclInProgress)
            return runtime_error(fmt::format("device {}: asynchronous NCCL error: {}", device_, ncclGetErrorString(st)));
          return Status::ok();
        });
        if (!async.is_ok() && !rt::is_aborted(async)) return async;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      raise_completed(i + 1);
    }
    times_.assign(n, {});
    for (int i = 0; i < n; ++i) {
      float a = 0, b = 0;
      PS_CUDA_RETURN(cudaEventElapsedTime(&a, epoch_, start_[i]));
      PS_CUDA_RETURN(cudaEventElapsedTime(&b, epoch_, end_[i]));
      times_[i] = {a, b};
    }
    return ops_->status();
  }

  // Polls the end events past the last completed op (thread-safe: the watchdog calls it while the
  // worker may still be enqueueing, possibly blocked in a full launch queue).
  int completed_ops() const override {
    std::lock_guard<std::mutex> lock(events_mu_);
    int done = completed_.load();
    while (done < enqueued_ && cudaEventQuery(end_[done]) == cudaSuccess) ++done;
    raise_completed(done);
    return completed_.load();
  }
  std::vector<rt::OpSpan> op_times() override { return times_; }

  // Thread-safe: aborts the communicator right away (a stuck NCCL kernel then exits), and makes the
  // worker's loops return. The gate is held by a worker only for one short NCCL call, never while it
  // waits for a transfer (kernels/comm_gate.h), so this never waits for the transfer.
  void abort() override { abort_comm(); }

  std::string describe() const override {
    return world_ > 0 ? fmt::format("{} rank {}/{}", ops_->name(), device_, world_) : ops_->name();
  }

  bool aborted() const { return gate_.aborted(); }

  void abort_comm() {
    gate_.abort([&] {
      if (comm_ == nullptr) return;
      (void)cudaSetDevice(ops_->gpu());
      (void)ncclCommAbort(comm_);
    });
  }

  void shutdown() {
    if (shut_) return;
    shut_ = true;
    (void)cudaSetDevice(ops_->gpu());
    // Finalize (non-blocking) then destroy; abort if it does not settle. The workers have stopped.
    if (comm_ != nullptr && !gate_.aborted()) {
      Status fin = PS_NCCL(ncclCommFinalize(comm_));
      if (fin.is_ok()) fin = wait_comm(comm_, 10.0, "ncclCommFinalize");
      if (fin.is_ok()) {
        (void)ncclCommDestroy(comm_);
        gate_.close();
      } else {
        abort_comm();
      }
    }
    for (cudaEvent_t e : start_) (void)cudaEventDestroy(e);
    for (cudaEvent_t e : end_) (void)cudaEventDestroy(e);
    if (epoch_) (void)cudaEventDestroy(epoch_);
    if (comm_stream_) (void)cudaStreamDestroy(comm_stream_);
  }

 private:
  void check(const Status& st) {
    if (!st.is_ok()) ops_->fail(st);
  }
  // completed_ only grows (the worker's finish loop and the watchdog both advance it).
  void raise_completed(int n) const {
    int cur = completed_.load();
    while (n > cur && !completed_.compare_exchange_weak(cur, n)) {
    }
  }
  bool ensure_events(int index) {
    std::lock_guard<std::mutex> lock(events_mu_);
    while (static_cast<int>(start_.size()) <= index) {
      cudaEvent_t a = nullptr, b = nullptr;
      Status st = PS_CUDA(cudaEventCreate(&a));
      if (st.is_ok()) st = PS_CUDA(cudaEventCreate(&b));
      if (!st.is_ok()) {
        check(st);
        return false;
      }
      start_.push_back(a);
      end_.push_back(b);
    }
    return true;
  }
  // After an NCCL call on the non-blocking communicator: waits until it is enqueued (or aborted),
  // holding the gate only for each ncclCommGetAsyncError.
  Status settle(const std::string& what) {
    return gate_.settle([&]() -> Result<bool> {
      ncclResult_t st = ncclInProgress;
      PS_NCCL_RETURN(ncclCommGetAsyncError(comm_, &st));
      if (st == ncclSuccess) return true;
      if (st != ncclInProgress)
        return runtime_error(fmt::format("device {}: NCCL error in '{}': {}", device_, what, ncclGetErrorString(st)));
      return false;
    });
  }

  int device_;
  int world_;
  std::unique_ptr<CudaOps> ops_;
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t epoch_ = nullptr;
  ncclComm_t comm_ = nullptr;
  CommGate gate_;  // the worker's NCCL calls and the watchdog's ncclCommAbort
  bool shut_ = false;
  mutable std::mutex events_mu_;  // guards start_/end_ growth and enqueued_ (read by completed_ops)
  std::vector<cudaEvent_t> start_, end_;
  std::vector<char> kinds_;  // per op: 1 = comm stream
  std::map<std::tuple<OpType, int, int>, int> produced_;  // (type, stage, mb) → op index of F/I/B/RECV
  int enqueued_ = 0;
  mutable std::atomic<int> completed_{0};
  std::vector<rt::OpSpan> times_;
};

// ---- the backend ----

class CudaBackend final : public rt::Backend {
 public:
  std::string name() const override { return "cuda"; }
  int num_devices() const override { return devices_; }
  std::vector<int> local_devices() const override {
    std::vector<int> v;
    for (const auto& [d, ctx] : ctx_) v.push_back(d);
    return v;
  }
  rt::DeviceContext& device(int d) override { return *ctx_.at(d); }

  Status begin_iteration() override {
    if (multi_process_) PS_RETURN_IF_ERROR(barrier());
    for (auto& [d, ctx] : ctx_) PS_RETURN_IF_ERROR(ctx->reset());
    return Status::ok();
  }
  void abort_all() override {
    for (auto& [d, ctx] : ctx_) ctx->abort();
  }

  // One process per GPU under an MPI launcher: the same control plane as the mpi backend (input
  // check, health, stop notices, results gathered on rank 0). Other launchers: each rank reports alone.
  int rank() const override { return world_ ? world_->rank() : 0; }
  int processes() const override { return world_ ? world_->size() : 1; }
  std::string process_label() const override { return world_ ? world_->label() : ""; }
  Status agree_on_inputs(const std::vector<std::pair<std::string, std::string>>& digests) override {
    return world_ ? rt::agree_on_inputs(*world_, digests, kInitTimeoutS) : Status::ok();
  }
  Status health() override { return world_ ? world_->health() : Status::ok(); }
  void announce_stop(const std::string& reason) override {
    if (world_) world_->stop(reason);
  }
  Status gather_results(rt::ExecResult& result) override {
    return world_ ? rt::gather_exec_results(*world_, result, kInitTimeoutS) : Status::ok();
  }

  static Result<std::unique_ptr<rt::Backend>> create(const CudaBackendOptions& opt);

 private:
  // Every pair of ranks exchanges one float in a group, so p2p connections exist before the
  // iteration (lazy connection setup inside the timed, watchdogged part could stall a rank).
  Status warm_up() {
    if (devices_ <= 1) return Status::ok();
    std::map<int, std::pair<float*, float*>> bufs;
    for (auto& [d, ctx] : ctx_) {
      PS_CUDA_RETURN(cudaSetDevice(ctx->cuda_ops().gpu()));
      float* a = nullptr;
      float* b = nullptr;
      PS_CUDA_RETURN(cudaMalloc(&a, sizeof(float) * devices_));
      PS_CUDA_RETURN(cudaMalloc(&b, sizeof(float) * devices_));
      PS_CUDA_RETURN(cudaMemset(a, 0, sizeof(float) * devices_));
      bufs[d] = {a, b};
    }
    Status st = PS_NCCL(ncclGroupStart());
    for (auto& [d, ctx] : ctx_) {
      for (int p = 0; p < devices_ && st.is_ok(); ++p) {
        if (p == d) continue;
        st = PS_NCCL(ncclSend(bufs[d].first + p, 1, ncclFloat, p, ctx->comm(), ctx->comm_stream()));
        if (st.is_ok()) st = PS_NCCL(ncclRecv(bufs[d].second + p, 1, ncclFloat, p, ctx->comm(), ctx->comm_stream()));
      }
    }
    Status end = PS_NCCL(ncclGroupEnd());
    if (st.is_ok()) st = end;
    for (auto& [d, ctx] : ctx_) {
      if (st.is_ok()) st = PS_CUDA(cudaSetDevice(ctx->cuda_ops().gpu()));
      if (st.is_ok()) st = wait_comm(ctx->comm(), kInitTimeoutS, "NCCL connection warm-up");
      if (st.is_ok()) st = wait_stream(ctx->comm_stream(), kInitTimeoutS, "NCCL connection warm-up");
    }
    for (auto& [d, ab] : bufs) {
      (void)cudaSetDevice(ctx_.at(d)->cuda_ops().gpu());
      (void)cudaFree(ab.first);
      (void)cudaFree(ab.second);
    }
    return st;
  }

  // All ranks meet: a 1-element all-reduce.
  Status barrier() {
    for (auto& [d, ctx] : ctx_) {
      PS_CUDA_RETURN(cudaSetDevice(ctx->cuda_ops().gpu()));
      if (barrier_buf_ == nullptr) PS_CUDA_RETURN(cudaMalloc(&barrier_buf_, sizeof(float)));
      PS_NCCL_RETURN(ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclFloat, ncclSum, ctx->comm(), ctx->comm_stream()));
      PS_RETURN_IF_ERROR(wait_comm(ctx->comm(), kInitTimeoutS, "barrier"));
      PS_RETURN_IF_ERROR(wait_stream(ctx->comm_stream(), kInitTimeoutS, "barrier (all ranks must start the iteration)"));
    }
    return Status::ok();
  }

 public:
  ~CudaBackend() override {
    if (barrier_buf_) (void)cudaFree(barrier_buf_);
    ctx_.clear();
  }

 private:
  // Device d of the schedule on GPU `gpu` (rank_world > 0: one process per GPU).
  Status add_device(int d, int gpu, int rank_world) {
    auto ops = CudaOps::create(gpu);
    if (!ops) return ops.status();
    auto ctx = std::make_unique<CudaDevice>(d, rank_world, std::move(*ops));
    PS_RETURN_IF_ERROR(ctx->init_streams());
    ctx_[d] = std::move(ctx);
    return Status::ok();
  }
  // One communicator per local device from one id (ranks = schedule devices), created in one group
  // and waited for (non-blocking communicators).
  Status init_comms(const ncclUniqueId& id, const char* what) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    std::map<int, ncclComm_t> comms;
    Status st = PS_NCCL(ncclGroupStart());
    for (auto& [d, ctx] : ctx_) {
      if (!st.is_ok()) break;
      st = PS_CUDA(cudaSetDevice(ctx->cuda_ops().gpu()));
      comms[d] = nullptr;
      if (st.is_ok()) st = PS_NCCL(ncclCommInitRankConfig(&comms[d], devices_, id, d, &config));
    }
    Status end = PS_NCCL(ncclGroupEnd());
    if (st.is_ok()) st = end;
    for (auto& [d, c] : comms)
      if (c != nullptr) ctx_.at(d)->set_comm(c);
    PS_RETURN_IF_ERROR(st);
    for (auto& [d, c] : comms) {
      PS_CUDA_RETURN(cudaSetDevice(ctx_.at(d)->cuda_ops().gpu()));
      PS_RETURN_IF_ERROR(wait_comm(c, kInitTimeoutS, what));
    }
    return Status::ok();
  }

  int devices_ = 0;
  bool multi_process_ = false;
  rt::MpiWorld* world_ = nullptr;  // set under an MPI launcher in a build with MPI
  float* barrier_buf_ = nullptr;
  std::map<int, std::unique_ptr<CudaDevice>> ctx_;
};

Result<std::unique_ptr<rt::Backend>> CudaBackend::create(const CudaBackendOptions& opt) {
  int gpus = 0;
  const cudaError_t e = cudaGetDeviceCount(&gpus);
  if (e != cudaSuccess)
    return runtime_error(fmt::format("no CUDA device: cudaGetDeviceCount failed: {} ({})", cudaGetErrorString(e),
                                     cudaGetErrorName(e)));
  if (gpus <= 0) return runtime_error("no CUDA device: cudaGetDeviceCount found none");
  if (opt.devices <= 0) return runtime_error("the schedule has no devices");
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  b->devices_ = opt.devices;
  const rt::LaunchEnv env = rt::launch_env();
  if (env.world > 1) {
    // One process per GPU (the launch path of the mpi backend): this process runs device `rank`.
    if (env.world != opt.devices)
      return runtime_error(fmt::format("{} processes were launched but the schedule has {} devices (one process per "
                                       "device)", env.world, opt.devices));
    b->multi_process_ = true;
    if (rt::mpi_built() && rt::launched_by_mpi()) {
      auto w = rt::MpiWorld::get();
      if (!w) return w.status();
      if ((*w)->size() != env.world || (*w)->rank() != env.rank)
        return runtime_error(fmt::format("{} says rank {} of {}, MPI says rank {} of {}", env.source, env.rank,
                                         env.world, (*w)->rank(), (*w)->size()));
      b->world_ = *w;
    }
    // GPU = local rank mod the visible GPUs: all GPUs of a node visible → the local rank's GPU; one GPU
    // per task (srun --gpus-per-task 1, CUDA_VISIBLE_DEVICES per rank) → that GPU.
    PS_RETURN_IF_ERROR(b->add_device(env.rank, (env.local_rank >= 0 ? env.local_rank : env.rank) % gpus, env.world));
    auto id = shared_unique_id(env, opt.nccl_id_file, b->world_);
    if (!id) return id.status();
    PS_RETURN_IF_ERROR(b->init_comms(*id, "ncclCommInitRankConfig (a stale NCCL id file?)"));
  } else {
    // One process, devices 0..P-1 on GPUs 0..P-1, one communicator each from one id.
    if (opt.devices > gpus)
      return runtime_error(fmt::format("the schedule has {} devices but only {} CUDA device(s) are visible; launch one "
                                       "process per GPU across nodes (docs/runtime.md)", opt.devices, gpus));
    for (int d = 0; d < opt.devices; ++d) PS_RETURN_IF_ERROR(b->add_device(d, d, 0));
    ncclUniqueId id{};
    PS_NCCL_RETURN(ncclGetUniqueId(&id));
    PS_RETURN_IF_ERROR(b->init_comms(id, "ncclCommInitRankConfig"));
  }
  PS_RETURN_IF_ERROR(b->warm_up());
  return std::unique_ptr<rt::Backend>(std::move(b));
}

}  // namespace

bool cuda_backend_built() { return true; }

Result<uint64_t> smallest_free_gpu_memory() {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus <= 0) {
    (void)cudaGetLastError();
    return runtime_error("no CUDA device");
  }
  uint64_t least = UINT64_MAX;
  for (int g = 0; g < gpus; ++g) {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(g) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return runtime_error(fmt::format("cudaMemGetInfo failed on GPU {}", g));
    }
    least = std::min<uint64_t>(least, free_bytes);
  }
  return least;
}

Result<std::unique_ptr<rt::Backend>> make_cuda_backend(const CudaBackendOptions& options) {
  return CudaBackend::create(options);
}

Result<std::string> nccl_id_hex() {
  ncclUniqueId id{};
  PS_NCCL_RETURN(ncclGetUniqueId(&id));
  return id_to_hex(id);
}

}  // namespace ps::kern

#endif  // PIPESMITH_HAVE_CUDA
