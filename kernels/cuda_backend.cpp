// cuda_backend.cpp — see cuda_backend.h. Host-side code (compiled by the C++ compiler); the kernels
// are in kernels/*.cu, the math in kernels/cuda_ops.cpp.
#if defined(PIPESMITH_HAVE_CUDA)
#include "kernels/cuda_backend.h"

#include <fmt/format.h>
#include <unistd.h>

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

#include "kernels/cuda_check.h"
#include "kernels/cuda_ops.h"

namespace ps::kern {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInitTimeoutS = 120;

Status runtime_error(std::string msg) { return Status::error(ErrorCode::kRuntime, std::move(msg)); }

// ---- rank environment and the ncclUniqueId bootstrap ----

struct RankEnv {
  int rank = -1;
  int world = -1;
  int local_rank = -1;
};

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 && x < 1 << 20 ? static_cast<int>(x) : -1;
}

RankEnv rank_from_env() {
  RankEnv e;
  static constexpr std::tuple<const char*, const char*, const char*> kLaunchers[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"}};
  for (const auto& [r, w, l] : kLaunchers) {
    if (env_int(r) >= 0 && env_int(w) > 0) {
      e.rank = env_int(r);
      e.world = env_int(w);
      e.local_rank = env_int(l);
      return e;
    }
  }
  return e;
}

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

Result<ncclUniqueId> shared_unique_id(const RankEnv& env, const std::string& file) {
  if (const char* hex = std::getenv("PIPESMITH_NCCL_ID"); hex && *hex) return id_from_hex(hex, "PIPESMITH_NCCL_ID");
  if (file.empty())
    return runtime_error(fmt::format(
        "rank {} of {}: multi-process mode needs --nccl-id-file PATH (a fresh path per job on a file system all ranks "
        "see) or PIPESMITH_NCCL_ID (from `pipesmith run --print-nccl-id`)",
        env.rank, env.world));
  if (env.rank == 0) {
    ncclUniqueId id{};
    PS_NCCL_RETURN(ncclGetUniqueId(&id));
    const std::string tmp = fmt::format("{}.tmp.{}", file, getpid());
    {
      std::ofstream out(tmp);
      out << id_to_hex(id) << "\n";
      if (!out) return runtime_error(fmt::format("cannot write '{}'", tmp));
    }
    if (std::rename(tmp.c_str(), file.c_str()) != 0)
      return runtime_error(fmt::format("cannot rename '{}' to '{}'", tmp, file));
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
    abort_requested_.store(false);
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
      auto it = produced_.find({t, stage, a.mb});
      if (it != produced_.end()) check(PS_CUDA(cudaStreamWaitEvent(s, end_[it->second], 0)));
    };
    switch (a.type) {
      case OpType::F: wait(OpType::RECV_F, a.stage); break;
      case OpType::I:
      case OpType::B: wait(OpType::RECV_B, a.stage); break;
      case OpType::SEND_F: wait(OpType::F, a.stage); break;
      case OpType::SEND_B:
        wait(OpType::I, a.stage);
        wait(OpType::B, a.stage);
        break;
      default: break;
    }
    check(PS_CUDA(cudaEventRecord(start_[index], s)));
  }

  void end_op(int index, const Action& a) override {
    if (index >= static_cast<int>(end_.size())) return;
    check(PS_CUDA(cudaEventRecord(end_[index], kinds_[index] ? comm_stream_ : ops_->stream())));
    if (a.type != OpType::W && a.type != OpType::SEND_F && a.type != OpType::SEND_B)
      produced_[{a.type, a.stage, a.mb}] = index;
    std::lock_guard<std::mutex> lock(events_mu_);
    enqueued_ = index + 1;
  }

  Status send(const Action& op, int peer, const rt::Tensor& t, const Action&) override {
    if (t.empty()) return runtime_error(fmt::format("'{}': nothing to send", to_string(op)));
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_aborted_) return rt::aborted_status();
    PS_NCCL_RETURN(ncclSend(t.f32(), t.count(), ncclFloat, peer, comm_, comm_stream_));
    PS_RETURN_IF_ERROR(settle_locked(to_string(op)));
    CudaOps::set_free_stream(t, comm_stream_);  // freed after the send, on its stream
    return Status::ok();
  }

  Result<rt::Tensor> recv(const Action& op, int peer, const Action&, size_t count) override {
    rt::Tensor t = ops_->alloc_on(count, rt::DType::kF32, comm_stream_);
    PS_RETURN_IF_ERROR(ops_->status());
    PS_CUDA_RETURN(cudaSetDevice(ops_->gpu()));
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_aborted_) return rt::aborted_status();
    PS_NCCL_RETURN(ncclRecv(t.f32(), count, ncclFloat, peer, comm_, comm_stream_));
    PS_RETURN_IF_ERROR(settle_locked(to_string(op)));
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
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_aborted_) return rt::aborted_status();
    if (!items.empty()) current.store(items.front().index);
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
    PS_RETURN_IF_ERROR(end);
    PS_RETURN_IF_ERROR(settle_locked("comm group"));
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
        if (abort_requested_.load() || aborted()) {
          abort_comm();
          return rt::aborted_status();
        }
        {
          std::lock_guard<std::mutex> lock(comm_mu_);
          if (!comm_aborted_) {
            ncclResult_t st = ncclSuccess;
            PS_NCCL_RETURN(ncclCommGetAsyncError(comm_, &st));
            if (st != ncclSuccess && st != ncclInProgress)
              return runtime_error(fmt::format("device {}: asynchronous NCCL error: {}", device_, ncclGetErrorString(st)));
          }
        }
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
  // worker's loops return.
  void abort() override {
    abort_requested_.store(true);
    abort_comm();
  }

  std::string describe() const override {
    return world_ > 0 ? fmt::format("{} rank {}/{}", ops_->name(), device_, world_) : ops_->name();
  }

  bool aborted() const {
    std::lock_guard<std::mutex> lock(comm_mu_);
    return comm_aborted_;
  }

  void abort_comm() {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_aborted_ || comm_ == nullptr) return;
    comm_aborted_ = true;
    (void)cudaSetDevice(ops_->gpu());
    (void)ncclCommAbort(comm_);
  }

  void shutdown() {
    if (shut_) return;
    shut_ = true;
    (void)cudaSetDevice(ops_->gpu());
    {
      std::lock_guard<std::mutex> lock(comm_mu_);
      if (comm_ != nullptr && !comm_aborted_) {
        // Finalize (non-blocking) then destroy; abort if it does not settle.
        Status fin = PS_NCCL(ncclCommFinalize(comm_));
        if (fin.is_ok()) fin = wait_comm(comm_, 10.0, "ncclCommFinalize");
        if (fin.is_ok()) (void)ncclCommDestroy(comm_);
        else (void)ncclCommAbort(comm_);
        comm_aborted_ = true;
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
  // After an NCCL call on the non-blocking communicator: waits until it is enqueued (or aborted).
  Status settle_locked(const std::string& what) {
    while (true) {
      ncclResult_t st = ncclInProgress;
      PS_NCCL_RETURN(ncclCommGetAsyncError(comm_, &st));
      if (st == ncclSuccess) return Status::ok();
      if (st != ncclInProgress)
        return runtime_error(fmt::format("device {}: NCCL error in '{}': {}", device_, what, ncclGetErrorString(st)));
      if (abort_requested_.load()) return rt::aborted_status();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  int device_;
  int world_;
  std::unique_ptr<CudaOps> ops_;
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t epoch_ = nullptr;
  ncclComm_t comm_ = nullptr;
  mutable std::mutex comm_mu_;
  bool comm_aborted_ = false;
  bool shut_ = false;
  std::atomic<bool> abort_requested_{false};
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
  int devices_ = 0;
  bool multi_process_ = false;
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
  const RankEnv env = rank_from_env();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  if (env.world > 1) {
    // One process per GPU.
    if (env.world != opt.devices)
      return runtime_error(fmt::format("{} processes were launched but the schedule has {} devices (one process per "
                                       "device)", env.world, opt.devices));
    b->multi_process_ = true;
    // GPU = local rank mod the visible GPUs: all GPUs of a node visible → the local rank's GPU; one GPU
    // per task (srun --gpus-per-task 1, CUDA_VISIBLE_DEVICES per rank) → that GPU.
    const int local = (env.local_rank >= 0 ? env.local_rank : env.rank) % gpus;
    auto ops = CudaOps::create(local);
    if (!ops) return ops.status();
    auto ctx = std::make_unique<CudaDevice>(env.rank, env.world, std::move(*ops));
    PS_RETURN_IF_ERROR(ctx->init_streams());
    auto id = shared_unique_id(env, opt.nccl_id_file);
    if (!id) return id.status();
    ncclComm_t comm = nullptr;
    PS_NCCL_RETURN(ncclCommInitRankConfig(&comm, env.world, *id, env.rank, &config));
    ctx->set_comm(comm);
    PS_RETURN_IF_ERROR(wait_comm(comm, kInitTimeoutS, "ncclCommInitRankConfig (stale --nccl-id-file?)"));
    b->ctx_[env.rank] = std::move(ctx);
  } else {
    // One process, devices 0..P-1 on GPUs 0..P-1.
    if (opt.devices > gpus)
      return runtime_error(fmt::format("the schedule has {} devices but only {} CUDA device(s) are visible; launch one "
                                       "process per GPU across nodes (docs/runtime.md)", opt.devices, gpus));
    for (int d = 0; d < opt.devices; ++d) {
      auto ops = CudaOps::create(d);
      if (!ops) return ops.status();
      auto ctx = std::make_unique<CudaDevice>(d, 0, std::move(*ops));
      PS_RETURN_IF_ERROR(ctx->init_streams());
      b->ctx_[d] = std::move(ctx);
    }
    ncclUniqueId id{};
    PS_NCCL_RETURN(ncclGetUniqueId(&id));
    std::vector<ncclComm_t> comms(opt.devices, nullptr);
    Status st = PS_NCCL(ncclGroupStart());
    for (int d = 0; d < opt.devices && st.is_ok(); ++d) {
      st = PS_CUDA(cudaSetDevice(d));
      if (st.is_ok()) st = PS_NCCL(ncclCommInitRankConfig(&comms[d], opt.devices, id, d, &config));
    }
    Status end = PS_NCCL(ncclGroupEnd());
    if (st.is_ok()) st = end;
    for (int d = 0; d < opt.devices; ++d)
      if (comms[d] != nullptr) b->ctx_[d]->set_comm(comms[d]);
    PS_RETURN_IF_ERROR(st);
    for (int d = 0; d < opt.devices; ++d)
      PS_RETURN_IF_ERROR(wait_comm(comms[d], kInitTimeoutS, "ncclCommInitRankConfig"));
  }
  PS_RETURN_IF_ERROR(b->warm_up());
  return std::unique_ptr<rt::Backend>(std::move(b));
}

}  // namespace

bool cuda_backend_built() { return true; }

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
