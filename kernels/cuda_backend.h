// cuda_backend.h — the CUDA + NCCL backend (kernels/cuda_backend.cpp, kernels/*.cu).
//
// Modes:
//  * multi-process (the target; same binary under torchrun/mpirun/srun): this process runs device
//    `rank` of the schedule on GPU `local_rank`; world size must equal the schedule's device count.
//    Rank/world come from RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/SIZE, SLURM_PROCID/SLURM_NTASKS or
//    PMI_RANK/PMI_SIZE; its GPU is the local rank (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
//    MPI_LOCALRANKID; else the rank) modulo the number of visible GPUs (runtime/mpi_world.h). The
//    ncclUniqueId comes from PIPESMITH_NCCL_ID (hex, see nccl_id_hex()), else --nccl-id-file (rank 0
//    writes it, the others wait for it), else — under an MPI launcher in a build with MPI — rank 0's
//    broadcast over MPI. Under an MPI launcher the processes also share the mpi backend's control
//    plane: the input check, dead-peer detection and stop notices, results gathered on rank 0.
//  * single-process multi-GPU (no rank in the environment): devices 0..P-1 on GPUs 0..P-1, one
//    worker thread per GPU; the same device setup and communicator creation (one ncclUniqueId,
//    ncclCommInitRankConfig per device in one group) as one process per GPU.
// Each device: compute on one stream (cuBLAS GEMMs, our kernels), NCCL p2p on a comm stream, CUDA
// events for exactly the dependencies of ir/schedule.h; rendezvous semantics = each SEND/RECV its own
// NCCL call (outside a group) on the comm stream, in program order; grouped semantics = each run of
// consecutive comm ops one ncclGroupStart/End. Every CUDA/NCCL call is checked
// (kernels/cuda_check.h); the finish loop polls ncclCommGetAsyncError; abort() calls ncclCommAbort
// without waiting for a worker's transfer (kernels/comm_gate.h).
// Without a usable GPU, make_cuda_backend fails with kRuntime "no CUDA device: ..." (never crashes);
// in a build without CUDA it fails with kRuntime "built without the CUDA backend".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ir/status.h"
#include "runtime/backend.h"
#include "runtime/backend_provider.h"

namespace ps::kern {

struct CudaBackendOptions {
  int devices = 1;             // devices of the schedule
  std::string nccl_id_file;    // multi-process bootstrap file (empty: PIPESMITH_NCCL_ID or single-process)
};

// True when this binary was built with CUDA and NCCL.
bool cuda_backend_built();

// The free memory of the visible GPU that has least (cudaMemGetInfo), what a run's estimate is held
// against before any allocation; an error when no GPU is usable or in a build
// without CUDA (the backend then fails with its own message).
Result<uint64_t> smallest_free_gpu_memory();

Result<std::unique_ptr<rt::Backend>> make_cuda_backend(const CudaBackendOptions& options);

// This backend as a run's provider (run/run_schedule.h): make_cuda_backend for the schedule's devices,
// and the memory check against the smallest free GPU memory (skipped without a usable GPU).
rt::BackendProvider cuda_provider(const std::string& nccl_id_file = "");

// A fresh ncclUniqueId as hex (for PIPESMITH_NCCL_ID); error without CUDA/NCCL.
Result<std::string> nccl_id_hex();

}  // namespace ps::kern
