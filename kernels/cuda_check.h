// cuda_check.h — checked CUDA, cuBLAS and NCCL calls (CUDA builds only).
//
// Guarantees: a failing call becomes a kRuntime Status whose message keeps the expression, the
// file:line of the call and the library's own error string, e.g.
//   "kernels/cuda_ops.cpp:88: cudaMallocAsync(&p, bytes, stream_) failed: out of memory (cudaErrorMemoryAllocation)".
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstring>

#include "ir/status.h"

namespace ps::kern {

inline const char* short_file(const char* file) {
  const char* k = std::strstr(file, "kernels/");
  return k ? k : file;
}

inline Status cuda_status(cudaError_t e, const char* expr, const char* file, int line) {
  if (e == cudaSuccess) return Status::ok();
  return Status::error(ErrorCode::kRuntime, fmt::format("{}:{}: {} failed: {} ({})", short_file(file), line, expr,
                                                        cudaGetErrorString(e), cudaGetErrorName(e)));
}

inline Status cublas_status(cublasStatus_t e, const char* expr, const char* file, int line) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status::error(ErrorCode::kRuntime, fmt::format("{}:{}: {} failed: {} ({})", short_file(file), line, expr,
                                                        cublasGetStatusString(e), cublasGetStatusName(e)));
}

inline Status nccl_status(ncclResult_t e, const char* expr, const char* file, int line) {
  if (e == ncclSuccess || e == ncclInProgress) return Status::ok();
  const char* last = ncclGetLastError(nullptr);
  return Status::error(ErrorCode::kRuntime, fmt::format("{}:{}: {} failed: {}{}{}", short_file(file), line, expr,
                                                        ncclGetErrorString(e), last && *last ? ": " : "",
                                                        last ? last : ""));
}

}  // namespace ps::kern

#define PS_CUDA(expr) ::ps::kern::cuda_status((expr), #expr, __FILE__, __LINE__)
#define PS_CUBLAS(expr) ::ps::kern::cublas_status((expr), #expr, __FILE__, __LINE__)
#define PS_NCCL(expr) ::ps::kern::nccl_status((expr), #expr, __FILE__, __LINE__)
#define PS_CUDA_RETURN(expr) PS_RETURN_IF_ERROR(PS_CUDA(expr))
#define PS_CUBLAS_RETURN(expr) PS_RETURN_IF_ERROR(PS_CUBLAS(expr))
#define PS_NCCL_RETURN(expr) PS_RETURN_IF_ERROR(PS_NCCL(expr))
