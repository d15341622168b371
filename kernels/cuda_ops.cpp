#include "kernels/cuda_ops.h"

#if defined(PIPESMITH_HAVE_CUDA)

#include <fmt/format.h>

#include "kernels/cuda_check.h"
#include "kernels/kernels.h"

namespace ps::kern {

namespace {

constexpr size_t kCublasWorkspaceBytes = 4u << 20;

class CudaStorage final : public rt::CountedStorage {
 public:
  CudaStorage(void* p, size_t bytes, int gpu, cudaStream_t stream, std::shared_ptr<rt::AllocCounters> counters)
      : rt::CountedStorage(p, bytes, std::move(counters)), gpu_(gpu), free_stream_(stream) {}
  ~CudaStorage() override {
    // Errors here cannot be reported to anyone; the memory returns to the pool in stream order.
    if (cudaSetDevice(gpu_) == cudaSuccess) (void)cudaFreeAsync(ptr(), free_stream_.load());
  }
  void set_free_stream(cudaStream_t s) { free_stream_.store(s); }

 private:
  int gpu_;
  std::atomic<cudaStream_t> free_stream_;
};

}  // namespace

Result<std::unique_ptr<CudaOps>> CudaOps::create(int gpu) {
  std::unique_ptr<CudaOps> ops(new CudaOps());
  ops->gpu_ = gpu;
  PS_CUDA_RETURN(cudaSetDevice(gpu));
  cudaDeviceProp prop{};
  PS_CUDA_RETURN(cudaGetDeviceProperties(&prop, gpu));
  ops->name_ = fmt::format("cuda:{} {}", gpu, prop.name);
  PS_CUDA_RETURN(cudaStreamCreateWithFlags(&ops->stream_, cudaStreamNonBlocking));
  PS_CUBLAS_RETURN(cublasCreate(&ops->cublas_));
  PS_CUBLAS_RETURN(cublasSetStream(ops->cublas_, ops->stream_));
  PS_CUBLAS_RETURN(cublasSetMathMode(ops->cublas_, CUBLAS_DEFAULT_MATH));
  PS_CUDA_RETURN(cudaMalloc(&ops->workspace_, kCublasWorkspaceBytes));
  PS_CUBLAS_RETURN(cublasSetWorkspace(ops->cublas_, ops->workspace_, kCublasWorkspaceBytes));
  return ops;
}

CudaOps::~CudaOps() {
  if (cudaSetDevice(gpu_) != cudaSuccess) return;
  if (cublas_) (void)cublasDestroy(cublas_);
  if (workspace_) (void)cudaFree(workspace_);
  if (stream_) (void)cudaStreamDestroy(stream_);
}

void CudaOps::fail(const Status& st) {
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.is_ok()) status_ = st;
}

Status CudaOps::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

bool CudaOps::ok() const { return status().is_ok(); }

rt::Tensor CudaOps::alloc_on(size_t count, rt::DType dtype, cudaStream_t stream) {
  const size_t bytes = count * rt::dtype_bytes(dtype);
  void* p = nullptr;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  Status st = PS_CUDA(cudaMallocAsync(&p, bytes == 0 ? 256 : bytes, stream));
  if (!st.is_ok()) {
    fail(Status::error(ErrorCode::kRuntime, fmt::format("{} ({} bytes on {})", st.message(), bytes, name_)));
    return rt::Tensor();  // empty: every op skips it, and the executor stops on status()
  }
  return rt::Tensor(std::make_shared<CudaStorage>(p, bytes, gpu_, stream_, counters_), count, dtype);
}

void CudaOps::set_free_stream(const rt::Tensor& t, cudaStream_t stream) {
  if (auto* s = dynamic_cast<CudaStorage*>(t.storage())) s->set_free_stream(stream);
}

rt::Tensor CudaOps::alloc(size_t count, rt::DType dtype) {
  rt::Tensor t = alloc_on(count, dtype, stream_);
  if (!t.empty() && t.bytes() > 0) check(PS_CUDA(cudaMemsetAsync(t.storage()->ptr(), 0, t.bytes(), stream_)));
  return t;
}

void CudaOps::upload(rt::Tensor& t, const void* host) {
  if (t.empty() || !ok()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  // Pageable source: the call returns once the data is staged, so `host` may be freed afterwards.
  check(PS_CUDA(cudaMemcpyAsync(t.storage()->ptr(), host, t.bytes(), cudaMemcpyHostToDevice, stream_)));
}

void CudaOps::download(const rt::Tensor& t, void* host) {
  if (t.empty() || !ok()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(PS_CUDA(cudaMemcpyAsync(host, t.storage()->ptr(), t.bytes(), cudaMemcpyDeviceToHost, stream_)));
  check(PS_CUDA(cudaStreamSynchronize(stream_)));
}

void CudaOps::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const rt::Tensor& a,
                   const rt::Tensor& b, float beta, rt::Tensor& c) {
  if (!ok() || a.empty() || b.empty() || c.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ on the same buffers.
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = trans_b ? k : n;
  const int lda = trans_a ? m : k;
  check(PS_CUBLAS(cublasSgemm(cublas_, op_b, op_a, n, m, k, &alpha, b.f32(), ldb, a.f32(), lda, &beta, c.f32(), n)));
}

void CudaOps::add(const rt::Tensor& x, rt::Tensor& y) {
  if (!ok() || x.empty() || y.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_add(x.f32(), y.f32(), x.count(), stream_));
}

void CudaOps::gelu_forward(const rt::Tensor& h, rt::Tensor& a) {
  if (!ok() || h.empty() || a.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_gelu_forward(h.f32(), a.f32(), h.count(), stream_));
}

void CudaOps::gelu_backward(const rt::Tensor& h, const rt::Tensor& da, rt::Tensor& dh) {
  if (!ok() || h.empty() || da.empty() || dh.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_gelu_backward(h.f32(), da.f32(), dh.f32(), h.count(), stream_));
}

void CudaOps::embedding_forward(const rt::Tensor& table, const rt::Tensor& tokens, int dim, rt::Tensor& out) {
  if (!ok() || table.empty() || tokens.empty() || out.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_embedding_forward(table.f32(), tokens.i32(), tokens.count(), dim, out.f32(), stream_));
}

void CudaOps::embedding_backward(const rt::Tensor& dout, const rt::Tensor& tokens, int dim, rt::Tensor& dtable) {
  if (!ok() || dout.empty() || tokens.empty() || dtable.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_embedding_backward(dout.f32(), tokens.i32(), tokens.count(), dim,
                                  static_cast<int>(dtable.count() / static_cast<size_t>(dim)), dtable.f32(), stream_));
}

void CudaOps::softmax_xent_forward(const rt::Tensor& logits, const rt::Tensor& targets, int rows, int classes,
                                   rt::Tensor& probs, rt::Tensor& loss) {
  if (!ok() || logits.empty() || targets.empty() || probs.empty() || loss.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_softmax_xent_forward(logits.f32(), targets.i32(), rows, classes, probs.f32(), loss.f32(), stream_));
}

void CudaOps::softmax_xent_backward(const rt::Tensor& probs, const rt::Tensor& targets, int rows, int classes,
                                    float scale, rt::Tensor& dlogits) {
  if (!ok() || probs.empty() || targets.empty() || dlogits.empty()) return;
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_softmax_xent_backward(probs.f32(), targets.i32(), rows, classes, scale, dlogits.f32(), stream_));
}

void CudaOps::head_shard_forward(const rt::Tensor& logits, const rt::Tensor& targets, int rows, int classes,
                                 int class_offset, const rt::Tensor& carry_in, rt::Tensor& probs, rt::Tensor& weights,
                                 rt::Tensor& carry_out, rt::Tensor& loss) {
  if (!ok() || logits.empty() || targets.empty() || probs.empty() || weights.empty() || carry_out.empty()) return;
  const size_t n = static_cast<size_t>(rows);
  if (rows < 0 || classes <= 0 || logits.count() != n * classes || probs.count() != logits.count() ||
      targets.count() != n || weights.count() != 2 * n || carry_out.count() != 2 * n ||
      (!carry_in.empty() && carry_in.count() != 2 * n) || (!loss.empty() && loss.count() != n)) {
    fail(Status::error(ErrorCode::kRuntime,
                       fmt::format("{}: head shard shape mismatch ({} rows × {} classes: logits {}, probs {}, "
                                   "targets {}, weights {}, carry in {}, carry out {}, loss {})",
                                   name_, rows, classes, logits.count(), probs.count(), targets.count(),
                                   weights.count(), carry_in.count(), carry_out.count(), loss.count())));
    return;
  }
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_head_shard_forward(logits.f32(), targets.i32(), rows, classes, class_offset,
                                  carry_in.empty() ? nullptr : carry_in.f32(), probs.f32(), weights.f32(),
                                  carry_out.f32(), loss.empty() ? nullptr : loss.f32(), stream_));
}

void CudaOps::head_shard_backward(const rt::Tensor& probs, const rt::Tensor& targets, const rt::Tensor& weights,
                                  const rt::Tensor& dcarry_out, int rows, int classes, int class_offset, float scale,
                                  rt::Tensor& dlogits, rt::Tensor& dcarry_in) {
  if (!ok() || probs.empty() || targets.empty() || weights.empty() || dlogits.empty()) return;
  const size_t n = static_cast<size_t>(rows);
  if (rows < 0 || classes <= 0 || probs.count() != n * classes || dlogits.count() != probs.count() ||
      targets.count() != n || weights.count() != 2 * n || (!dcarry_out.empty() && dcarry_out.count() != 2 * n) ||
      (!dcarry_in.empty() && dcarry_in.count() != 2 * n)) {
    fail(Status::error(ErrorCode::kRuntime,
                       fmt::format("{}: head shard' shape mismatch ({} rows × {} classes: probs {}, dlogits {}, "
                                   "targets {}, weights {}, dcarry out {}, dcarry in {})",
                                   name_, rows, classes, probs.count(), dlogits.count(), targets.count(),
                                   weights.count(), dcarry_out.count(), dcarry_in.count())));
    return;
  }
  check(PS_CUDA(cudaSetDevice(gpu_)));
  check(launch_head_shard_backward(probs.f32(), targets.i32(), weights.f32(),
                                   dcarry_out.empty() ? nullptr : dcarry_out.f32(), rows, classes, class_offset, scale,
                                   dlogits.f32(), dcarry_in.empty() ? nullptr : dcarry_in.f32(), stream_));
}

void CudaOps::copy(const rt::Tensor& src, size_t src_offset, rt::Tensor& dst, size_t dst_offset, size_t count) {
  if (!ok() || src.empty() || dst.empty() || count == 0) return;
  if (src.dtype() != dst.dtype() || src_offset + count > src.count() || dst_offset + count > dst.count()) {
    fail(Status::error(ErrorCode::kRuntime,
                       fmt::format("{}: copy of {} elements out of range (source {} from {}, destination {} from {})",
                                   name_, count, src.count(), src_offset, dst.count(), dst_offset)));
    return;
  }
  check(PS_CUDA(cudaSetDevice(gpu_)));
  const size_t e = rt::dtype_bytes(src.dtype());
  check(PS_CUDA(cudaMemcpyAsync(static_cast<char*>(dst.storage()->ptr()) + dst_offset * e,
                                static_cast<const char*>(src.storage()->ptr()) + src_offset * e, count * e,
                                cudaMemcpyDeviceToDevice, stream_)));
}

}  // namespace ps::kern

#endif  // PIPESMITH_HAVE_CUDA
