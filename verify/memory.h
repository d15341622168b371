// memory.h — per-device memory in compute program order (the memory part of ir/schedule.h).
//
// Guarantees: a device holds the model states of its stages all the time; F(s,m) allocates
// activation_mb(s) (recompute_kept_mb(s) on a recomputing stage, whose R(s,m) allocates the rest);
// I(s,m) frees all but wgrad_stash_mb(s); W(s,m) frees the stash; B(s,m) frees
// all; on a stage FSDP shards, UNSHARD(s) allocates unsharded_mb(s) and RESHARD(s) frees it. Because
// memory changes in program order, the peak (and the op where it is first reached) is a property of
// the program, not of timing. SEND/RECV and REDUCE_GRAD do not change memory.
#pragma once

#include <vector>

#include "ir/schedule.h"

namespace ps::verify_detail {

struct MemoryStep {
  int op_index = 0;    // op of the device program that changes memory
  double after_mb = 0; // device memory after it
  bool at_start = true;  // allocations happen when the op starts, frees when it ends
};

struct DeviceMemory {
  double model_state_mb = 0;       // held all the time
  double peak_mb = 0;              // max over the program (>= model_state_mb)
  int peak_op_index = -1;          // first op after which the peak is reached (-1: model states only)
  std::vector<MemoryStep> steps;   // in program order
};

std::vector<DeviceMemory> memory_by_program(const Schedule& s);

}  // namespace ps::verify_detail
