// simulate.h — the timing simulation of ir/schedule.h's two-stream model, under one semantics.
//
// Each device has a compute stream (its compute ops in program order; an op starts when the
// previous compute ended and the RECV delivering its cross-device input has completed) and a comm
// stream (its comm ops in program order; a SEND is ready when its producing compute has ended).
//   rendezvous: a pair starts when both sides are ready (the previous comm op on each side has
//               completed); it takes latency + bytes/bandwidth; both complete at its end.
//   grouped:    a maximal run of consecutive comm ops is issued together once the previous group
//               completed and the group's SENDs are ready; a pair starts when both groups are
//               issued; the next group waits for the whole group.
//   buffered:   a SEND completes when issued (the comm stream moves on) and its data arrives one
//               transfer later; a RECV completes at the later of its issue and that arrival.
// Each device also has a data-parallel stream (its REDUCE_GRAD, UNSHARD and RESHARD ops in program
// order; one starts when the previous one ended and its stage's last backward — for UNSHARD the
// compute op before it in the program — ended, and takes reduce_grad_ms, unshard_ms or nothing). A
// compute op of an FSDP stage also waits for its UNSHARD.
// Recorded op intervals: compute [start, end]; comm ops the interval the data moves (for a
// rendezvous/grouped pair both sides get the same interval; a buffered RECV [max(issue, send),
// completion]). Makespan = the last end (first op at 0). Longest-path evaluation with a worklist of
// devices: O(ops). Preconditions: structure, dependency and comm rules held, and the deadlock
// analysis found the schedule safe under `sem` (which implies this model completes: each of its
// waits is also a wait of the logical execution).
#pragma once

#include "ir/schedule.h"
#include "verify/op_table.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

// `recompute_in_backward`: VerifyOptions::recompute_in_backward (an R directly before its own I/B
// waits for that backward's received gradient too; it adds no wait the I/B did not have).
Simulation simulate_timing(const Schedule& s, const OpTable& t, Semantics sem, bool recompute_in_backward = false);

}  // namespace ps::verify_detail
