// cuda_provider.cpp — the CUDA + NCCL backend as a run's provider (run/run_schedule.h). Without a
// usable GPU the memory check is skipped and make() says why the backend cannot start.
#include "kernels/cuda_backend.h"

namespace ps::kern {

rt::BackendProvider cuda_provider(const std::string& nccl_id_file) {
  rt::BackendProvider p;
  p.name = "cuda";
  p.make = [nccl_id_file](const rt::BackendRequest& r) {
    CudaBackendOptions co;
    co.devices = r.devices;
    co.nccl_id_file = nccl_id_file;
    return make_cuda_backend(co);
  };
  p.check_fits = [](const rt::MemoryEstimate& need, int devices, const std::string& what) {
    Result<uint64_t> gpu_free = smallest_free_gpu_memory();
    if (!gpu_free.ok()) return Status::ok();
    return rt::check_fits_gpu(rt::one_gpus_share(need, devices), *gpu_free, what);
  };
  return p;
}

}  // namespace ps::kern
