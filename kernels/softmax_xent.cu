// softmax_xent.cu — row-wise softmax with cross-entropy loss (forward) and its gradient, with launchers.
#include "kernels/kernels.h"
#include "kernels/launch.h"

namespace ps::kern {

namespace {

constexpr int kRowThreads = 256;  // power of two (tree reduction)
constexpr int kThreads = 256;

// One block per row: max, then Σ exp, by fixed-shape tree reductions in shared memory.
__global__ void softmax_xent_forward_kernel(const float* __restrict__ logits, const int32_t* __restrict__ targets,
                                            int classes, float* __restrict__ probs, float* __restrict__ loss) {
  __shared__ float red[kRowThreads];
  const int r = blockIdx.x;
  const float* l = logits + static_cast<size_t>(r) * classes;
  float* p = probs + static_cast<size_t>(r) * classes;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) mx = fmaxf(mx, l[j]);
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) {
    const float e = expf(l[j] - mx);
    p[j] = e;
    sum += e;
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  sum = red[0];
  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) p[j] *= inv;
  if (threadIdx.x == 0) loss[r] = logf(sum) + mx - l[targets[r]];
}

__global__ void softmax_xent_backward_kernel(const float* __restrict__ probs, const int32_t* __restrict__ targets,
                                             int rows, int classes, float scale, float* __restrict__ dlogits) {
  const size_t n = static_cast<size_t>(rows) * classes;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i / classes), j = static_cast<int>(i % classes);
    dlogits[i] = scale * (probs[i] - (j == targets[r] ? 1.0f : 0.0f));
  }
}

}  // namespace

Status launch_softmax_xent_forward(const float* logits, const int32_t* targets, int rows, int classes, float* probs,
                                   float* loss, cudaStream_t stream) {
  if (rows == 0) return Status::ok();
  if (!logits || !targets || !probs || !loss || rows < 0 || classes <= 0)
    return Status::error(ErrorCode::kRuntime, "softmax_xent_forward: null pointer or bad shape");
  softmax_xent_forward_kernel<<<rows, kRowThreads, 0, stream>>>(logits, targets, classes, probs, loss);
  return launch_status("softmax_xent_forward_kernel");
}

Status launch_softmax_xent_backward(const float* probs, const int32_t* targets, int rows, int classes, float scale,
                                    float* dlogits, cudaStream_t stream) {
  if (rows == 0) return Status::ok();
  if (!probs || !targets || !dlogits || rows < 0 || classes <= 0)
    return Status::error(ErrorCode::kRuntime, "softmax_xent_backward: null pointer or bad shape");
  softmax_xent_backward_kernel<<<grid_for(static_cast<size_t>(rows) * classes, kThreads), kThreads, 0, stream>>>(
      probs, targets, rows, classes, scale, dlogits);
  return launch_status("softmax_xent_backward_kernel");
}

}  // namespace ps::kern
