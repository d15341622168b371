// host_memory.h — what a run or a profile will allocate on the host, and whether the host has it.
//
// The estimate comes from the shapes the executor allocates (runtime/exec_model.h, memory_rule.h), in
// fp32: every stage's parameters, their accumulated gradients and the gathered copy of them, one stage's
// transient weight gradients; the activations the memory rule holds at each device's peak plus one op's
// scratch (a slot) per device; a message of each direction per stage boundary; each microbatch's token
// ids and targets; with the sequential reference, its parameters, gradients and one microbatch's slots.
// The machine's memory is /proc/meminfo's MemAvailable, less when RLIMIT_AS (ulimit -v) leaves less
// address space than that. A run that would not fit is refused before anything is allocated.
#pragma once

#include <cstdint>
#include <string>

#include "ir/schedule.h"
#include "ir/status.h"
#include "runtime/exec_model.h"

namespace ps::rt {

struct MemoryEstimate {
  uint64_t params_bytes = 0;       // parameters, gradients, gathered gradients, transient W gradients
  uint64_t activations_bytes = 0;  // held slots at each device's peak, one op's scratch per device
  uint64_t buffers_bytes = 0;      // messages, token ids and targets
  uint64_t reference_bytes = 0;    // the sequential reference (--check-gradients)
  uint64_t total() const { return params_bytes + activations_bytes + buffers_bytes + reference_bytes; }
  // "12.3 GB (parameters 2.1 GB, activations 9.9 GB, buffers 0.3 GB)"
  std::string describe() const;
};

// What executing `schedule` on `model` allocates on the host (`reference`: and the gradient check's
// sequential run). Saturates instead of overflowing.
MemoryEstimate estimate_run_memory(const Schedule& schedule, const ExecModel& model, bool reference);

// The part of a run's memory the host holds when each rank is its own process (the mpi backend): the
// ranks launched here (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE of OMPI_COMM_WORLD_SIZE) hold about that
// share of the whole; the whole when the launch does not say.
MemoryEstimate this_machines_share(const MemoryEstimate& whole);  // (the sequential reference: rank 0's, whole)

// What one of `devices` GPUs holds of a run (the cuda backend: each device's tensors on its own
// GPU): the whole divided evenly, the sequential reference left out (it runs on the host).
MemoryEstimate one_gpus_share(const MemoryEstimate& whole, int devices);

// Ok when `need` (one GPU's share) fits in `gpu_free` bytes; otherwise a bad-input Status naming
// both numbers.
Status check_fits_gpu(const MemoryEstimate& need, uint64_t gpu_free, const std::string& what);

struct HostMemory {
  uint64_t mem_available_bytes = 0;   // /proc/meminfo MemAvailable; 0 when unknown
  uint64_t address_space_left = UINT64_MAX;  // RLIMIT_AS less what this process maps; UINT64_MAX: no limit
  uint64_t available() const;         // the smaller known one (UINT64_MAX when neither is known)
};
HostMemory host_memory();

// Ok when `need` fits in `have`; otherwise a bad-input Status naming both numbers and where the
// available one comes from: "WHAT needs about NEED (its parts), more than the AVAIL available
// (MemAvailable X; ulimit -v leaves Y)".
Status check_fits(const MemoryEstimate& need, const HostMemory& have, const std::string& what);

}  // namespace ps::rt
