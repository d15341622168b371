// cuda_ops.h — rt::Ops on one GPU (CUDA builds only): cuBLAS SGEMM (default FP32 math, no TF32),
// our kernels (kernels/kernels.h), stream-ordered allocation (cudaMallocAsync/cudaFreeAsync).
//
// Guarantees: every call is enqueued on the compute stream (asynchronous) except download, which
// waits; every CUDA/cuBLAS call is checked and the first failure is kept in status(); each method
// makes its GPU current first, so any thread may call it. A tensor is freed on the stream that used
// it last (set_free_stream: the comm stream for a sent buffer), so memory is never reused early.
#pragma once

#if defined(PIPESMITH_HAVE_CUDA)

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/counted_storage.h"
#include "runtime/ops.h"

namespace ps::kern {

class CudaOps final : public rt::Ops {
 public:
  // Makes `gpu` current, creates the compute stream and the cuBLAS handle (with its own workspace).
  static Result<std::unique_ptr<CudaOps>> create(int gpu);
  ~CudaOps() override;

  int gpu() const { return gpu_; }
  cudaStream_t stream() const { return stream_; }
  // Allocates on `stream` (the comm stream for a RECV buffer); not zeroed.
  rt::Tensor alloc_on(size_t count, rt::DType dtype, cudaStream_t stream);
  // The tensor's memory will be released on `stream` (after the work enqueued there so far).
  static void set_free_stream(const rt::Tensor& t, cudaStream_t stream);
  // Records a failure (first one wins).
  void fail(const Status& st);

  rt::Tensor alloc(size_t count, rt::DType dtype) override;
  void upload(rt::Tensor& t, const void* host) override;
  void download(const rt::Tensor& t, void* host) override;
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const rt::Tensor& a, const rt::Tensor& b,
            float beta, rt::Tensor& c) override;
  void add(const rt::Tensor& x, rt::Tensor& y) override;
  void gelu_forward(const rt::Tensor& h, rt::Tensor& a) override;
  void gelu_backward(const rt::Tensor& h, const rt::Tensor& da, rt::Tensor& dh) override;
  void embedding_forward(const rt::Tensor& table, const rt::Tensor& tokens, int dim, rt::Tensor& out) override;
  void embedding_backward(const rt::Tensor& dout, const rt::Tensor& tokens, int dim, rt::Tensor& dtable) override;
  void softmax_xent_forward(const rt::Tensor& logits, const rt::Tensor& targets, int rows, int classes,
                            rt::Tensor& probs, rt::Tensor& loss) override;
  void softmax_xent_backward(const rt::Tensor& probs, const rt::Tensor& targets, int rows, int classes, float scale,
                             rt::Tensor& dlogits) override;
  // One shard of a vocabulary-parallel head (kernels in softmax_xent.cu); a shape that does not match
  // rows/classes records a kRuntime failure.
  void head_shard_forward(const rt::Tensor& logits, const rt::Tensor& targets, int rows, int classes,
                          int class_offset, const rt::Tensor& carry_in, rt::Tensor& probs, rt::Tensor& weights,
                          rt::Tensor& carry_out, rt::Tensor& loss) override;
  void head_shard_backward(const rt::Tensor& probs, const rt::Tensor& targets, const rt::Tensor& weights,
                           const rt::Tensor& dcarry_out, int rows, int classes, int class_offset, float scale,
                           rt::Tensor& dlogits, rt::Tensor& dcarry_in) override;
  bool supports_sharded_head() const override { return true; }
  void copy(const rt::Tensor& src, size_t src_offset, rt::Tensor& dst, size_t dst_offset, size_t count) override;

  Status status() const override;
  size_t live_bytes() const override { return counters_->live(); }
  size_t peak_bytes() const override { return counters_->peak(); }
  std::string name() const override { return name_; }

 private:
  CudaOps() = default;
  bool ok() const;
  void check(const Status& st) {
    if (!st.is_ok()) fail(st);
  }

  int gpu_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* workspace_ = nullptr;
  std::shared_ptr<rt::AllocCounters> counters_ = std::make_shared<rt::AllocCounters>();
  mutable std::mutex mu_;
  Status status_;
};

}  // namespace ps::kern

#endif  // PIPESMITH_HAVE_CUDA
