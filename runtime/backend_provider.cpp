// backend_provider.cpp — the host and mpi providers.
#include "runtime/backend_provider.h"

#include "runtime/host_backend.h"
#include "runtime/mpi_backend.h"

namespace ps::rt {

BackendProvider host_provider() {
  BackendProvider p;
  p.name = "host";
  p.make = [](const BackendRequest& r) -> Result<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<HostBackend>(r.devices));
  };
  p.check_fits = [](const MemoryEstimate& need, int, const std::string& what) {
    return check_fits(need, host_memory(), what);
  };
  return p;
}

BackendProvider mpi_provider() {
  BackendProvider p;
  p.name = "mpi";
  p.make = [](const BackendRequest& r) -> Result<std::unique_ptr<Backend>> {
    MpiBackendOptions mpo;
    mpo.devices = r.devices;
    mpo.stages = r.stages;
    mpo.microbatches = r.microbatches;
    return make_mpi_backend(mpo);
  };
  p.check_fits = [](const MemoryEstimate& need, int, const std::string& what) {
    return check_fits(this_machines_share(need), host_memory(), what);
  };
  return p;
}

}  // namespace ps::rt
