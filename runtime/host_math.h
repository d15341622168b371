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

// One shard of a vocabulary-parallel head: classes [class_offset, class_offset + classes) of the
// global vocabulary (ExecModel's head shards; the derivation is in runtime/stage_compute.cpp).
// Carries are [2 × rows]: entries 0..rows-1 the running log-sum-exp L, rows..2·rows-1 the running
// target logit t. Per row r, with S = log Σ_j exp(logits[r, j]):
//   L_out = logaddexp(L_in, S), t_out = t_in + logits[r, target − class_offset] (target in range),
//   probs[r, :] = softmax(logits[r, :]), weights = (exp(L_in − L_out), exp(S − L_out)) as a carry,
//   loss[r] = L_out − t_out (only when `loss` is non-null: the last shard).
// A null carry_in is the start of the chain (L_in = −inf, t_in = 0); then L_out = S exactly.
void host_head_shard_forward(const float* logits, const int32_t* targets, int rows, int classes,
                             int class_offset, const float* carry_in, float* probs, float* weights,
                             float* carry_out, float* loss);
// Its gradient. dcarry_out = (dL_out, dt) per row as a carry; null for the last shard, where the loss
// mean(L − t)·scale gives dL_out = scale, dt = −scale. Writes
//   dlogits[r, :] = dL_out·w_self·probs[r, :] + dt·onehot(target − class_offset),
//   dcarry_in = (dL_out·w_prev, dt) (skipped when null: the first shard's carry_in is a constant).
void host_head_shard_backward(const float* probs, const int32_t* targets, const float* weights,
                              const float* dcarry_out, int rows, int classes, int class_offset,
                              float scale, float* dlogits, float* dcarry_in);

}  // namespace ps::rt
