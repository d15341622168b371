// memory_rule.h — the memory rule of ir/schedule.h evaluated with the executable model's real
// buffer sizes: what the executor's held_bytes must be after every op.
//
// Rule: F(s,m) adds after_forward(s); I(s,m) changes it to after_input(s) (this model's stash also
// holds the gradients W needs, so it may be larger than the activation); W(s,m) frees after_input(s);
// B(s,m) frees after_forward(s). On a recomputing stage F(s,m) adds only recompute_kept(s) and R(s,m)
// adds after_forward(s) − recompute_kept(s) (runtime/stage_compute.h). Comm ops change nothing (a received input is counted from the F that
// consumes it). The executor's measurement comes from the tensors actually held, so equality with this
// prediction shows that buffers are freed exactly when the semantics say.
#pragma once

#include <cstddef>
#include <vector>

#include "ir/schedule.h"
#include "runtime/exec_model.h"

namespace ps::rt {

struct StageBytes {
  size_t after_forward = 0;  // activation of one microbatch: inputs + what I needs
  size_t after_input = 0;    // stash of one microbatch: what W needs
  size_t recompute_kept = 0; // what a recomputing F keeps: its input message (0 for an embedding stage)
};

// Bytes of one (stage, microbatch) slot, from the block shapes.
StageBytes stage_slot_bytes(const ExecModel& model, int stage);

struct RuleMemory {
  std::vector<size_t> held_bytes;  // after each op
  size_t peak_bytes = 0;
  int peak_op_index = -1;          // first op index reaching the peak
};

// Per device of the schedule.
std::vector<RuleMemory> memory_by_rule(const Schedule& schedule, const ExecModel& model);

}  // namespace ps::rt
