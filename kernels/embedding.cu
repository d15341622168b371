// embedding.cu — embedding gather (forward) and a deterministic scatter-add (backward), with launchers.
#include "kernels/kernels.h"
#include "kernels/launch.h"

namespace ps::kern {

namespace {

__global__ void embedding_forward_kernel(const float* __restrict__ table, const int32_t* __restrict__ tokens,
                                         size_t num_tokens, int dim, float* __restrict__ out) {
  const size_t n = num_tokens * static_cast<size_t>(dim);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t t = i / dim, j = i % dim;
    out[i] = table[static_cast<size_t>(tokens[t]) * dim + j];
  }
}

// One thread per table element: sums the rows of dout whose token is its row, in token order
// (no atomics, so the result does not depend on scheduling).
__global__ void embedding_backward_kernel(const float* __restrict__ dout, const int32_t* __restrict__ tokens,
                                          size_t num_tokens, int dim, int rows, float* __restrict__ dtable) {
  const size_t n = static_cast<size_t>(rows) * dim;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int v = static_cast<int>(i / dim);
    const size_t j = i % dim;
    float acc = dtable[i];
    for (size_t t = 0; t < num_tokens; ++t)
      if (tokens[t] == v) acc += dout[t * dim + j];
    dtable[i] = acc;
  }
}

}  // namespace

Status launch_embedding_forward(const float* table, const int32_t* tokens, size_t num_tokens, int dim, float* out,
                                cudaStream_t stream) {
  if (num_tokens == 0) return Status::ok();
  if (!table || !tokens || !out || dim <= 0)
    return Status::error(ErrorCode::kRuntime, "embedding_forward: null pointer or dim <= 0");
  embedding_forward_kernel<<<grid_for(num_tokens * dim, kThreads), kThreads, 0, stream>>>(table, tokens, num_tokens,
                                                                                          dim, out);
  return launch_status("embedding_forward_kernel");
}

Status launch_embedding_backward(const float* dout, const int32_t* tokens, size_t num_tokens, int dim, int rows,
                                 float* dtable, cudaStream_t stream) {
  if (num_tokens == 0 || rows == 0) return Status::ok();
  if (!dout || !tokens || !dtable || dim <= 0 || rows < 0)
    return Status::error(ErrorCode::kRuntime, "embedding_backward: null pointer or bad shape");
  embedding_backward_kernel<<<grid_for(static_cast<size_t>(rows) * dim, kThreads), kThreads, 0, stream>>>(
      dout, tokens, num_tokens, dim, rows, dtable);
  return launch_status("embedding_backward_kernel");
}

}  // namespace ps::kern
