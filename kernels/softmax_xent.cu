// softmax_xent.cu — row-wise softmax with cross-entropy loss (forward) and its gradient, and the same
// for one shard of a vocabulary-parallel head (the (L, t) carry; runtime/host_math.h), with launchers.
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "runtime/head_shard_carry.h"

namespace ps::kern {

namespace {

constexpr int kRowThreads = 256;  // power of two (tree reduction)

// Softmax of row l [classes] into p, by one block of kRowThreads threads: max, then Σ exp, by
// fixed-shape tree reductions in shared memory. Returns the row's log-sum-exp log(Σ) + max to every
// thread (the order of host_math's row_softmax).
__device__ float block_row_softmax(const float* __restrict__ l, int classes, float* __restrict__ p) {
  __shared__ float red[kRowThreads];
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
  return logf(sum) + mx;
}

// One block per row.
__global__ void softmax_xent_forward_kernel(const float* __restrict__ logits, const int32_t* __restrict__ targets,
                                            int classes, float* __restrict__ probs, float* __restrict__ loss) {
  const int r = blockIdx.x;
  const float* l = logits + static_cast<size_t>(r) * classes;
  const float lse = block_row_softmax(l, classes, probs + static_cast<size_t>(r) * classes);
  if (threadIdx.x == 0) loss[r] = lse - l[targets[r]];
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

// One block per row: the shard's softmax and log-sum-exp S, then thread 0's carry update, the host's
// own function (L_out = logaddexp(L_in, S), t_out, the saved weights and, on the last shard, the loss;
// runtime/head_shard_carry.h).
__global__ void head_shard_forward_kernel(const float* __restrict__ logits, const int32_t* __restrict__ targets,
                                          int rows, int classes, int class_offset, const float* __restrict__ carry_in,
                                          float* __restrict__ probs, float* __restrict__ weights,
                                          float* __restrict__ carry_out, float* __restrict__ loss) {
  const int r = blockIdx.x;
  const float* l = logits + static_cast<size_t>(r) * classes;
  const float s = block_row_softmax(l, classes, probs + static_cast<size_t>(r) * classes);
  if (threadIdx.x != 0) return;
  rt::head_shard_row_carry(l, classes, targets[r] - class_offset, s, r, rows, carry_in, weights, carry_out, loss);
}

// dz[r, j] = dL_out·w_self·probs[r, j] + dt·[j = target − offset]; the first element of each row also
// writes dcarry_in[r] = (dL_out·w_prev, dt). A null dcarry_out is the last shard: (dL_out, dt) =
// (scale, −scale). The product is rounded before the add (no FMA), as on the host.
__global__ void head_shard_backward_kernel(const float* __restrict__ probs, const int32_t* __restrict__ targets,
                                           const float* __restrict__ weights, const float* __restrict__ dcarry_out,
                                           int rows, int classes, int class_offset, float scale,
                                           float* __restrict__ dlogits, float* __restrict__ dcarry_in) {
  const size_t n = static_cast<size_t>(rows) * classes;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i / classes), j = static_cast<int>(i % classes);
    const float dl = dcarry_out != nullptr ? dcarry_out[r] : scale;
    const float dt = dcarry_out != nullptr ? dcarry_out[rows + r] : -scale;
    const float ds = __fmul_rn(dl, weights[rows + r]);
    float d = __fmul_rn(ds, probs[i]);
    if (j == targets[r] - class_offset) d += dt;
    dlogits[i] = d;
    if (j == 0 && dcarry_in != nullptr) {
      dcarry_in[r] = __fmul_rn(dl, weights[r]);
      dcarry_in[rows + r] = dt;
    }
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

Status launch_head_shard_forward(const float* logits, const int32_t* targets, int rows, int classes, int class_offset,
                                 const float* carry_in, float* probs, float* weights, float* carry_out, float* loss,
                                 cudaStream_t stream) {
  if (rows == 0) return Status::ok();
  if (!logits || !targets || !probs || !weights || !carry_out || rows < 0 || classes <= 0 || class_offset < 0)
    return Status::error(ErrorCode::kRuntime, "head_shard_forward: null pointer or bad shape");
  head_shard_forward_kernel<<<rows, kRowThreads, 0, stream>>>(logits, targets, rows, classes, class_offset, carry_in,
                                                              probs, weights, carry_out, loss);
  return launch_status("head_shard_forward_kernel");
}

Status launch_head_shard_backward(const float* probs, const int32_t* targets, const float* weights,
                                  const float* dcarry_out, int rows, int classes, int class_offset, float scale,
                                  float* dlogits, float* dcarry_in, cudaStream_t stream) {
  if (rows == 0) return Status::ok();
  if (!probs || !targets || !weights || !dlogits || rows < 0 || classes <= 0 || class_offset < 0)
    return Status::error(ErrorCode::kRuntime, "head_shard_backward: null pointer or bad shape");
  head_shard_backward_kernel<<<grid_for(static_cast<size_t>(rows) * classes, kThreads), kThreads, 0, stream>>>(
      probs, targets, weights, dcarry_out, rows, classes, class_offset, scale, dlogits, dcarry_in);
  return launch_status("head_shard_backward_kernel");
}

}  // namespace ps::kern
