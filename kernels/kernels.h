// kernels.h — launchers of our CUDA kernels (kernels/*.cu), one per kernel, next to it in its .cu.
//
// Guarantees: every launcher checks its preconditions (sizes, non-null pointers) and returns the
// launch error (cudaGetLastError) as a Status naming the kernel; kernels are deterministic (no
// atomics; fixed reduction order), and each has a CPU reference in kernels/reference.h.
// Pointers are device pointers; work is enqueued on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ir/status.h"

namespace ps::kern {

Status launch_add(const float* x, float* y, size_t n, cudaStream_t stream);  // y += x
Status launch_gelu_forward(const float* h, float* a, size_t n, cudaStream_t stream);
Status launch_gelu_backward(const float* h, const float* da, float* dh, size_t n, cudaStream_t stream);
Status launch_embedding_forward(const float* table, const int32_t* tokens, size_t num_tokens, int dim, float* out,
                                cudaStream_t stream);
// dtable[v, :] += Σ_{t: tokens[t] = v} dout[t, :] (in token order); rows = table rows.
Status launch_embedding_backward(const float* dout, const int32_t* tokens, size_t num_tokens, int dim, int rows,
                                 float* dtable, cudaStream_t stream);
Status launch_softmax_xent_forward(const float* logits, const int32_t* targets, int rows, int classes, float* probs,
                                   float* loss, cudaStream_t stream);
Status launch_softmax_xent_backward(const float* probs, const int32_t* targets, int rows, int classes, float scale,
                                    float* dlogits, cudaStream_t stream);
// One shard of a vocabulary-parallel head (semantics: host_head_shard_forward in runtime/host_math.h).
// carry_in [2·rows] may be null (the first shard); loss [rows] may be null (not the last shard).
Status launch_head_shard_forward(const float* logits, const int32_t* targets, int rows, int classes, int class_offset,
                                 const float* carry_in, float* probs, float* weights, float* carry_out, float* loss,
                                 cudaStream_t stream);
// Its gradient (host_head_shard_backward). dcarry_out may be null (the last shard: the loss scaled by
// `scale`); dcarry_in may be null (the first shard).
Status launch_head_shard_backward(const float* probs, const int32_t* targets, const float* weights,
                                  const float* dcarry_out, int rows, int classes, int class_offset, float scale,
                                  float* dlogits, float* dcarry_in, cudaStream_t stream);

}  // namespace ps::kern
