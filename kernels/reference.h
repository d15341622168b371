// reference.h — naive CPU references of every kernel the backends use (the test oracles).
//
// Guarantees: written for clarity, not speed — textbook loops, double accumulation where a sum is
// taken — so they are an independent check of both the host backend's blocked math
// (runtime/host_math.h) and the CUDA kernels (kernels/kernels.h). Same semantics as runtime/ops.h.
#pragma once

#include <cstdint>
#include <vector>

namespace ps::kern::ref {

// C = alpha·op(A)·op(B) + beta·C, row-major (see runtime/ops.h for the storage of transposed operands).
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const std::vector<float>& a,
          const std::vector<float>& b, float beta, std::vector<float>& c);
float gelu(float x);
float gelu_grad(float x);
void gelu_forward(const std::vector<float>& h, std::vector<float>& a);
void gelu_backward(const std::vector<float>& h, const std::vector<float>& da, std::vector<float>& dh);
void add(const std::vector<float>& x, std::vector<float>& y);
void embedding_forward(const std::vector<float>& table, const std::vector<int32_t>& tokens, int dim,
                       std::vector<float>& out);
void embedding_backward(const std::vector<float>& dout, const std::vector<int32_t>& tokens, int dim,
                        std::vector<float>& dtable);
void softmax_xent_forward(const std::vector<float>& logits, const std::vector<int32_t>& targets, int rows,
                          int classes, std::vector<float>& probs, std::vector<float>& loss);
void softmax_xent_backward(const std::vector<float>& probs, const std::vector<int32_t>& targets, int rows,
                           int classes, float scale, std::vector<float>& dlogits);
// One shard of a vocabulary-parallel head, classes [class_offset, class_offset + classes) (semantics:
// host_head_shard_forward in runtime/host_math.h). carry_in [2·rows] = (L, t) per row, empty for the
// first shard; writes probs, weights = (e^(L_in − L_out), e^(S − L_out)), carry_out = (L_out, t_out),
// each [2·rows], and loss [rows] = L_out − t_out when `with_loss` (left empty otherwise).
void head_shard_forward(const std::vector<float>& logits, const std::vector<int32_t>& targets, int rows, int classes,
                        int class_offset, const std::vector<float>& carry_in, bool with_loss,
                        std::vector<float>& probs, std::vector<float>& weights, std::vector<float>& carry_out,
                        std::vector<float>& loss);
// Its gradient (host_head_shard_backward). dcarry_out [2·rows], empty for the last shard (then
// (dL, dt) = (scale, −scale)); writes dlogits and dcarry_in [2·rows] = (dL·w_prev, dt).
void head_shard_backward(const std::vector<float>& probs, const std::vector<int32_t>& targets,
                         const std::vector<float>& weights, const std::vector<float>& dcarry_out, int rows, int classes,
                         int class_offset, float scale, std::vector<float>& dlogits, std::vector<float>& dcarry_in);

// max_i |a_i − b_i| / max(max_i |b_i|, tiny): the tolerance measure of the kernel tests.
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace ps::kern::ref
