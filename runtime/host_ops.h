// host_ops.h — Ops on the CPU (runtime/host_math.h), with exact allocation accounting.
//
// Guarantees: synchronous (every call has finished when it returns); thread-compatible (one device
// thread uses one HostOps; the byte counters are atomic so another thread may read them).
#pragma once

#include <memory>
#include <string>

#include "runtime/counted_storage.h"
#include "runtime/ops.h"

namespace ps::rt {

class HostOps final : public Ops {
 public:
  explicit HostOps(std::string name = "host");
  ~HostOps() override;

  Tensor alloc(size_t count, DType dtype) override;
  void upload(Tensor& t, const void* host) override;
  void download(const Tensor& t, void* host) override;
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a,
            const Tensor& b, float beta, Tensor& c) override;
  void add(const Tensor& x, Tensor& y) override;
  void gelu_forward(const Tensor& h, Tensor& a) override;
  void gelu_backward(const Tensor& h, const Tensor& da, Tensor& dh) override;
  void embedding_forward(const Tensor& table, const Tensor& tokens, int dim, Tensor& out) override;
  void embedding_backward(const Tensor& dout, const Tensor& tokens, int dim, Tensor& dtable) override;
  void softmax_xent_forward(const Tensor& logits, const Tensor& targets, int rows, int classes,
                            Tensor& probs, Tensor& loss) override;
  void softmax_xent_backward(const Tensor& probs, const Tensor& targets, int rows, int classes,
                             float scale, Tensor& dlogits) override;
  void head_shard_forward(const Tensor& logits, const Tensor& targets, int rows, int classes, int class_offset,
                          const Tensor& carry_in, Tensor& probs, Tensor& weights, Tensor& carry_out,
                          Tensor& loss) override;
  void head_shard_backward(const Tensor& probs, const Tensor& targets, const Tensor& weights,
                           const Tensor& dcarry_out, int rows, int classes, int class_offset, float scale,
                           Tensor& dlogits, Tensor& dcarry_in) override;
  bool supports_sharded_head() const override { return true; }
  void copy(const Tensor& src, size_t src_offset, Tensor& dst, size_t dst_offset, size_t count) override;

  Status status() const override { return Status::ok(); }
  size_t live_bytes() const override { return counters_->live(); }
  size_t peak_bytes() const override { return counters_->peak(); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::shared_ptr<AllocCounters> counters_ = std::make_shared<AllocCounters>();
};

}  // namespace ps::rt
