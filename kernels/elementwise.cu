// elementwise.cu — y += x and the tanh-approximation GELU (forward and derivative), with launchers.
#include "kernels/kernels.h"
#include "kernels/launch.h"

namespace ps::kern {

namespace {

__device__ __forceinline__ float gelu_d(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

__device__ __forceinline__ float gelu_grad_d(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  const float t = tanhf(u);
  const float du = 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

__global__ void add_kernel(const float* __restrict__ x, float* __restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

__global__ void gelu_forward_kernel(const float* __restrict__ h, float* __restrict__ a, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    a[i] = gelu_d(h[i]);
}

__global__ void gelu_backward_kernel(const float* __restrict__ h, const float* __restrict__ da,
                                     float* __restrict__ dh, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dh[i] = da[i] * gelu_grad_d(h[i]);
}

}  // namespace

Status launch_add(const float* x, float* y, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  if (!x || !y) return Status::error(ErrorCode::kRuntime, "add: null pointer");
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, y, n);
  return launch_status("add_kernel");
}

Status launch_gelu_forward(const float* h, float* a, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  if (!h || !a) return Status::error(ErrorCode::kRuntime, "gelu_forward: null pointer");
  gelu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(h, a, n);
  return launch_status("gelu_forward_kernel");
}

Status launch_gelu_backward(const float* h, const float* da, float* dh, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  if (!h || !da || !dh) return Status::error(ErrorCode::kRuntime, "gelu_backward: null pointer");
  gelu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(h, da, dh, n);
  return launch_status("gelu_backward_kernel");
}

}  // namespace ps::kern
