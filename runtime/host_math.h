// host_math.h — the host backend's math on raw fp32 arrays: a cache-blocked GEMM and the
// element-wise, embedding and loss functions of the executable model.
//
// Guarantees: single-threaded and deterministic (fixed loop and reduction order, no data-dependent
// branching on addresses), so the same inputs give bit-identical outputs on every run. Semantics
// match runtime/ops.h; kernels/reference.h holds independent naive versions used as test oracles.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ps::rt {

// C[m×n] = alpha·op(A)·op(B) + beta·C, row-major. op(A) is m×k (A is k×m when trans_a),
// op(B) is k×n (B is n×k when trans_b). beta == 0 ignores C's old contents (even NaN).
void host_gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
               const float* b, float beta, float* c);

// tanh-approximation GELU: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
float gelu_value(float x);
// d gelu(x) / dx.
float gelu_derivative(float x);

void host_gelu_forward(const float* h, float* a, size_t n);
void host_gelu_backward(const float* h, const float* da, float* dh, size_t n);
void host_embedding_forward(const float* table, const int32_t* tokens, size_t num_tokens, int dim,
                            float* out);
void host_embedding_backward(const float* dout, const int32_t* tokens, size_t num_tokens, int dim,
                             float* dtable);
void host_softmax_xent_forward(const float* logits, const int32_t* targets, int rows, int classes,
                               float* probs, float* loss);
void host_softmax_xent_backward(const float* probs, const int32_t* targets, int rows, int classes,
                                float scale, float* dlogits);

}  // namespace ps::rt
