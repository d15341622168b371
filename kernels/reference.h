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

// max_i |a_i − b_i| / max(max_i |b_i|, tiny): the tolerance measure of the kernel tests.
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace ps::kern::ref
