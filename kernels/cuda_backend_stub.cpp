// cuda_backend_stub.cpp — make_cuda_backend in a build without CUDA/NCCL: a clean runtime error.
#if !defined(PIPESMITH_HAVE_CUDA)
#include "kernels/cuda_backend.h"

namespace ps::kern {

bool cuda_backend_built() { return false; }

Result<std::unique_ptr<rt::Backend>> make_cuda_backend(const CudaBackendOptions&) {
  return Status::error(ErrorCode::kRuntime,
                       "built without the CUDA backend (CUDA/NCCL were not found when pipesmith was configured); "
                       "the host backend needs neither");
}

Result<uint64_t> smallest_free_gpu_memory() {
  return Status::error(ErrorCode::kRuntime, "built without the CUDA backend");
}

Result<std::string> nccl_id_hex() {
  return Status::error(ErrorCode::kRuntime, "built without the CUDA backend: no NCCL");
}

}  // namespace ps::kern
#endif
