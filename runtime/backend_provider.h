// backend_provider.h — how a run gets its backend: a name, a factory for the schedule's shape, and
// the check that the run's memory fits where that backend holds it. The host and mpi providers live
// here; the CUDA one in kernels/cuda_backend.h. run/run_schedule.h takes any of them.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ir/status.h"
#include "runtime/backend.h"
#include "runtime/host_memory.h"

namespace ps::rt {

struct BackendRequest {
  int devices = 1;       // devices of the schedule
  int stages = 1;        // stages of the schedule
  int microbatches = 1;  // microbatches of the schedule
};

struct BackendProvider {
  std::string name;  // "host", "mpi", "cuda"
  std::function<Result<std::unique_ptr<Backend>>(const BackendRequest&)> make;
  // kRuntime with the figures when the run needs more memory than is at hand (`what` names the run);
  // empty: nothing to check.
  std::function<Status(const MemoryEstimate& need, int devices, const std::string& what)> check_fits;
};

// One process, a host thread per device: the whole run is held in this process's host memory.
BackendProvider host_provider();
// One process per rank under an MPI launcher: each host holds the share of the ranks it runs.
BackendProvider mpi_provider();

}  // namespace ps::rt
