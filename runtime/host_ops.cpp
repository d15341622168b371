#include "runtime/host_ops.h"

#include <cstring>
#include <new>

#include "runtime/host_math.h"

namespace ps::rt {

namespace {
class HostStorage final : public CountedStorage {
 public:
  using CountedStorage::CountedStorage;
  ~HostStorage() override { ::operator delete(ptr(), std::align_val_t{64}); }
};
}  // namespace

HostOps::HostOps(std::string name) : name_(std::move(name)) {}
HostOps::~HostOps() = default;

Tensor HostOps::alloc(size_t count, DType dtype) {
  const size_t bytes = count * dtype_bytes(dtype);
  void* p = ::operator new(bytes == 0 ? 64 : bytes, std::align_val_t{64});
  std::memset(p, 0, bytes);
  return Tensor(std::make_shared<HostStorage>(p, bytes, counters_), count, dtype);
}

void HostOps::upload(Tensor& t, const void* host) { std::memcpy(t.storage()->ptr(), host, t.bytes()); }
void HostOps::download(const Tensor& t, void* host) { std::memcpy(host, t.storage()->ptr(), t.bytes()); }

void HostOps::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Tensor& a,
                   const Tensor& b, float beta, Tensor& c) {
  PS_ASSERT(a.count() == static_cast<size_t>(m) * k && b.count() == static_cast<size_t>(k) * n &&
                c.count() == static_cast<size_t>(m) * n,
            "gemm shape mismatch");
  host_gemm(trans_a, trans_b, m, n, k, alpha, a.f32(), b.f32(), beta, c.f32());
}

void HostOps::add(const Tensor& x, Tensor& y) {
  PS_ASSERT(x.count() == y.count(), "add shape mismatch");
  float* yp = y.f32();
  const float* xp = x.f32();
  for (size_t i = 0; i < x.count(); ++i) yp[i] += xp[i];
}

void HostOps::gelu_forward(const Tensor& h, Tensor& a) {
  PS_ASSERT(h.count() == a.count(), "gelu shape mismatch");
  host_gelu_forward(h.f32(), a.f32(), h.count());
}

void HostOps::gelu_backward(const Tensor& h, const Tensor& da, Tensor& dh) {
  PS_ASSERT(h.count() == da.count() && h.count() == dh.count(), "gelu' shape mismatch");
  host_gelu_backward(h.f32(), da.f32(), dh.f32(), h.count());
}

void HostOps::embedding_forward(const Tensor& table, const Tensor& tokens, int dim, Tensor& out) {
  PS_ASSERT(out.count() == tokens.count() * dim, "embedding shape mismatch");
  host_embedding_forward(table.f32(), tokens.i32(), tokens.count(), dim, out.f32());
}

void HostOps::embedding_backward(const Tensor& dout, const Tensor& tokens, int dim, Tensor& dtable) {
  PS_ASSERT(dout.count() == tokens.count() * dim, "embedding' shape mismatch");
  host_embedding_backward(dout.f32(), tokens.i32(), tokens.count(), dim, dtable.f32());
}

void HostOps::softmax_xent_forward(const Tensor& logits, const Tensor& targets, int rows, int classes,
                                   Tensor& probs, Tensor& loss) {
  PS_ASSERT(logits.count() == static_cast<size_t>(rows) * classes && probs.count() == logits.count() &&
                loss.count() == static_cast<size_t>(rows) && targets.count() == loss.count(),
            "softmax-xent shape mismatch");
  host_softmax_xent_forward(logits.f32(), targets.i32(), rows, classes, probs.f32(), loss.f32());
}

void HostOps::softmax_xent_backward(const Tensor& probs, const Tensor& targets, int rows, int classes,
                                    float scale, Tensor& dlogits) {
  PS_ASSERT(probs.count() == static_cast<size_t>(rows) * classes && dlogits.count() == probs.count(),
            "softmax-xent' shape mismatch");
  host_softmax_xent_backward(probs.f32(), targets.i32(), rows, classes, scale, dlogits.f32());
}

void HostOps::head_shard_forward(const Tensor& logits, const Tensor& targets, int rows, int classes,
                                 int class_offset, const Tensor& carry_in, Tensor& probs, Tensor& weights,
                                 Tensor& carry_out, Tensor& loss) {
  const size_t n = static_cast<size_t>(rows);
  PS_ASSERT(logits.count() == n * classes && probs.count() == logits.count() && targets.count() == n &&
                weights.count() == 2 * n && carry_out.count() == 2 * n &&
                (carry_in.empty() || carry_in.count() == 2 * n) && (loss.empty() || loss.count() == n),
            "head shard shape mismatch");
  host_head_shard_forward(logits.f32(), targets.i32(), rows, classes, class_offset,
                          carry_in.empty() ? nullptr : carry_in.f32(), probs.f32(), weights.f32(), carry_out.f32(),
                          loss.empty() ? nullptr : loss.f32());
}

void HostOps::head_shard_backward(const Tensor& probs, const Tensor& targets, const Tensor& weights,
                                  const Tensor& dcarry_out, int rows, int classes, int class_offset, float scale,
                                  Tensor& dlogits, Tensor& dcarry_in) {
  const size_t n = static_cast<size_t>(rows);
  PS_ASSERT(probs.count() == n * classes && dlogits.count() == probs.count() && targets.count() == n &&
                weights.count() == 2 * n && (dcarry_out.empty() || dcarry_out.count() == 2 * n) &&
                (dcarry_in.empty() || dcarry_in.count() == 2 * n),
            "head shard' shape mismatch");
  host_head_shard_backward(probs.f32(), targets.i32(), weights.f32(), dcarry_out.empty() ? nullptr : dcarry_out.f32(),
                           rows, classes, class_offset, scale, dlogits.f32(),
                           dcarry_in.empty() ? nullptr : dcarry_in.f32());
}

void HostOps::copy(const Tensor& src, size_t src_offset, Tensor& dst, size_t dst_offset, size_t count) {
  PS_ASSERT(src.dtype() == dst.dtype() && src_offset + count <= src.count() && dst_offset + count <= dst.count(),
            "copy out of range");
  const size_t e = dtype_bytes(src.dtype());
  std::memcpy(static_cast<char*>(dst.storage()->ptr()) + dst_offset * e,
              static_cast<const char*>(src.storage()->ptr()) + src_offset * e, count * e);
}

}  // namespace ps::rt
