// ops.h — the math a backend provides to run the executable model on one device.
//
// Guarantees (for every implementation):
//  * All tensors passed to an Ops were allocated by that same Ops; shapes are checked by callers.
//  * Layout is row-major; `gemm` computes C[m×n] = alpha·op(A)·op(B) + beta·C with op(A) of shape
//    m×k (A stored k×m when trans_a), op(B) of shape k×n (B stored n×k when trans_b).
//  * Results depend only on the inputs (no atomics, fixed reduction order within a backend), so a
//    run is reproducible bit for bit on the same backend.
//  * Ops may be asynchronous (CUDA: enqueued on the device's compute stream); `download` waits.
//    A failed call makes status() non-ok (sticky); callers check it after each schedule op.
//  * live_bytes/peak_bytes count every allocation made through alloc() (tensors of all kinds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace ps::rt {

class Ops {
 public:
  virtual ~Ops() = default;

  // Zero-initialised tensor of `count` elements.
  virtual Tensor alloc(size_t count, DType dtype) = 0;
  // Host memory → tensor (bytes == t.bytes()).
  virtual void upload(Tensor& t, const void* host) = 0;
  // Tensor → host memory (bytes == t.bytes()); waits for pending work on the tensor.
  virtual void download(const Tensor& t, void* host) = 0;

  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a,
                    const Tensor& b, float beta, Tensor& c) = 0;
  // y += x (same count).
  virtual void add(const Tensor& x, Tensor& y) = 0;
  // a = gelu(h) (tanh approximation).
  virtual void gelu_forward(const Tensor& h, Tensor& a) = 0;
  // dh = da ⊙ gelu'(h).
  virtual void gelu_backward(const Tensor& h, const Tensor& da, Tensor& dh) = 0;
  // out[t, :] = table[tokens[t], :] for t < tokens.count(); rows of width `dim`.
  virtual void embedding_forward(const Tensor& table, const Tensor& tokens, int dim, Tensor& out) = 0;
  // dtable[tokens[t], :] += dout[t, :], in token order (deterministic).
  virtual void embedding_backward(const Tensor& dout, const Tensor& tokens, int dim, Tensor& dtable) = 0;
  // Row-wise softmax of logits[rows×classes] into probs; loss[r] = -log probs[r, targets[r]].
  virtual void softmax_xent_forward(const Tensor& logits, const Tensor& targets, int rows, int classes,
                                    Tensor& probs, Tensor& loss) = 0;
  // dlogits = scale · (probs − onehot(targets)).
  virtual void softmax_xent_backward(const Tensor& probs, const Tensor& targets, int rows,
                                     int classes, float scale, Tensor& dlogits) = 0;
  // One shard of a vocabulary-parallel head (semantics: host_head_shard_forward in
  // runtime/host_math.h). carry_in [2·rows] = (L, t) per row, empty for the first shard; writes probs
  // [rows×classes], weights [2·rows], carry_out [2·rows] and, when `loss` is non-empty, loss [rows].
  virtual void head_shard_forward(const Tensor& logits, const Tensor& targets, int rows, int classes,
                                  int class_offset, const Tensor& carry_in, Tensor& probs, Tensor& weights,
                                  Tensor& carry_out, Tensor& loss) = 0;
  // Its gradient (host_head_shard_backward). dcarry_out empty for the last shard (the loss scaled by
  // `scale`); dcarry_in may be empty (the first shard).
  virtual void head_shard_backward(const Tensor& probs, const Tensor& targets, const Tensor& weights,
                                   const Tensor& dcarry_out, int rows, int classes, int class_offset,
                                   float scale, Tensor& dlogits, Tensor& dcarry_in) = 0;
  // False where head_shard_* are not implemented (the run is then refused before it starts).
  virtual bool supports_sharded_head() const = 0;
  // dst[dst_offset + i] = src[src_offset + i] for i < count (same dtype); packs and unpacks the
  // head chain's boundary messages.
  virtual void copy(const Tensor& src, size_t src_offset, Tensor& dst, size_t dst_offset, size_t count) = 0;

  // First error of any call so far (ok when none).
  virtual Status status() const = 0;
  virtual size_t live_bytes() const = 0;
  virtual size_t peak_bytes() const = 0;
  virtual std::string name() const = 0;  // "host", "cuda:0 NVIDIA H200"
};

}  // namespace ps::rt
