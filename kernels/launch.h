// launch.h — the launch-error check, block size and grid size shared by the launchers in kernels/*.cu.
#pragma once

#include <cuda_runtime_api.h>
#include <string>

#include "ir/status.h"

namespace ps::kern {

// Threads per block of the one-thread-per-element kernels.
inline constexpr int kThreads = 256;

// Status of the last kernel launch on this thread, naming the kernel.
inline Status launch_status(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  // (no fmt here: nvcc's C++20 mode rejects fmt's consteval format strings)
  return Status::error(ErrorCode::kRuntime, std::string("launch of ") + kernel + " failed: " + cudaGetErrorString(e) +
                                                " (" + cudaGetErrorName(e) + ")");
}

inline unsigned grid_for(size_t n, int threads) {
  const size_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b == 0 ? 1 : (b < 65535 ? b : 65535));
}

}  // namespace ps::kern
