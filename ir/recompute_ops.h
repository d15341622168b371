// recompute_ops.h — where a schedule's R ops sit relative to the backwards they serve.
//
// Guarantees:
//  * insert_recompute_ops puts R(s,m) immediately before the I(s,m) or B(s,m) of every stage s that
//    recomputes (StageSpec::recompute), on the same device; programs of other stages are unchanged.
//    That is the latest place R can go, so the recomputed activations live for the shortest time.
//    It expects a schedule without R ops.
//  * recompute_at_backward moves every R of a schedule there: the schedule as a runtime runs it whose
//    recomputation starts inside the backward (PyTorch's torch.utils.checkpoint). Compute order is
//    otherwise unchanged; SEND/RECV ops keep their places. No predicted times, no certificate.
//  * recompute_ops_moved counts the R ops that recompute_at_backward moves in compute order (R ops
//    already directly before their I/B among the device's compute ops count 0): with 0, both orders
//    time the same.
//  * without_recompute_ops drops the R ops (and their predicted times when present); an
//    OVERLAP_F_B cell loses its R sub-actions and otherwise keeps its extent.
#pragma once

#include "ir/schedule.h"

namespace ps {

Schedule insert_recompute_ops(Schedule s);
Schedule without_recompute_ops(const Schedule& s);
Schedule recompute_at_backward(const Schedule& s);
int recompute_ops_moved(const Schedule& s);

}  // namespace ps
