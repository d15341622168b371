// dp_ops.h — THE rule that places the data-parallel step's ops (REDUCE_GRAD) in a schedule, shared
// by the checker (verify/), the search (synth/) and the runtime (run/): one function, no copies.
//
// Rule (docs/verifier-rules.md, "Data-parallel ops"): for every stage with a data-parallel step
// (StageSpec::reduces_grad), REDUCE_GRAD(s) goes right after the last backward of s (its last B or W)
// in its device's program — the earliest place the checker accepts, and where PyTorch's own
// `_add_reduce_grad` puts it. On one device they come out in the order their stages' last backwards
// run, which is the order that ends the device's data-parallel stream soonest (each reduction can
// start no earlier than its stage's last backward, and the stream runs one at a time). A stage FSDP
// shards (StageSpec::fsdp) gets UNSHARD(s) one cell before its first compute op (the gather is
// issued while the op before runs; at the program's start for a stage that runs first) and RESHARD(s)
// right after its REDUCE_GRAD (or its last backward).
#pragma once

#include "ir/schedule.h"

namespace ps {

// Whether any stage of the problem has a data-parallel step.
bool needs_data_parallel_ops(const Problem& p);
// Whether any program holds a data-parallel op.
bool has_data_parallel_ops(const Schedule& s);
// `s` with REDUCE_GRAD, UNSHARD and RESHARD inserted by the rule above. Precondition: no data-parallel ops yet, and every
// stage that reduces has at least one backward on its device (the structural rules hold).
Schedule with_data_parallel_ops(const Schedule& s);
// `s` without its data-parallel ops (what one pipeline replica runs: no data-parallel peers).
Schedule without_data_parallel_ops(const Schedule& s);

}  // namespace ps
