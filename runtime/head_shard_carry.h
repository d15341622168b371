// head_shard_carry.h — one row's carry through one shard of a vocabulary-parallel head, after the
// shard's softmax (the semantics of host_head_shard_forward, runtime/host_math.h). One inline function
// that the host math (runtime/host_math.cpp) and the CUDA kernel (kernels/softmax_xent.cu) both call,
// so the two backends update the carry with the same operations in the same order. Plain C++ for the
// host compiler; `__host__ __device__` under nvcc.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define PS_HOST_DEVICE __host__ __device__
#else
#define PS_HOST_DEVICE
#endif

namespace ps::rt {

// Row r of a shard of `classes` logits l (its log-sum-exp s, the target's index in the shard
// `local`, out of range when the target lies in another shard): L_out = logaddexp(L_in, s), t_out =
// t_in + l[local], weights (e^(L_in − L_out), e^(s − L_out)) and, when loss is non-null (the last
// shard), loss = L_out − t_out. Carries and weights are [2 × rows] (row r at r and rows + r); a null
// carry_in is the start of the chain (L_out = s, weights (0, 1), t_out = 0 + l[local]).
PS_HOST_DEVICE inline void head_shard_row_carry(const float* l, int classes, int local, float s, int r, int rows,
                                                const float* carry_in, float* weights, float* carry_out,
                                                float* loss) {
  float lse = s, w_prev = 0.0f, w_self = 1.0f, t = 0.0f;
  if (carry_in != nullptr) {
    const float l_in = carry_in[r];
    t = carry_in[rows + r];
    const float m = fmaxf(l_in, s);
    lse = m + logf(expf(l_in - m) + expf(s - m));
    w_prev = expf(l_in - lse);
    w_self = expf(s - lse);
  }
  if (local >= 0 && local < classes) t += l[local];
  carry_out[r] = lse;
  carry_out[rows + r] = t;
  weights[r] = w_prev;
  weights[rows + r] = w_self;
  if (loss != nullptr) loss[r] = lse - t;
}

}  // namespace ps::rt
