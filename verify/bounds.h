// bounds.h — lower bounds on the makespan for a fixed partition and placement.
//
// Guarantees: every schedule of the Problem (any order, any semantics, comm inserted or not) has a
// simulated makespan >= lower_bound_ms(problem) (verify.h). Derivations (docs/verifier-rules.md,
// "Lower bounds"); all assume M microbatches per stage, each compute op's time as compute_ms gives it
// (overhead included), x_b the transfer time of boundary b (0 when stages b, b+1 share a device), and
// c_s = F_s + least_backward_ms(s) per microbatch: a stage that splits may run B or I and W, so its
// backward costs at least the cheaper of the two (a fused B can cost less than I + W):
//  1. Device work: a device runs its compute ops one at a time, so
//       makespan >= work_d = M * sum_{s on d} c_s (+ M R_s on a recomputing stage).
//  2. One microbatch's critical path: F(0..S-1,m), then the backward chain I/B(S-1..0,m), then W(s,m)
//     after I(s,m); every link waits for the previous one, transfers included:
//       makespan >= max_s [ sum_t F_t + sum_b x_b + sum_{t>=s} bw_t + sum_{b>=s} x_b + w_s ]
//     with bw_t = min(I_t, B_t) (split) or B_t (fused only), w_s = min(W_s, B_s - bw_s) if s is split
//     (W_s itself when B_s = I_s + W_s and there is no overhead) else 0, so bw_s + w_s is at most
//     both I_s + W_s and B_s.
//  3. Head + work + tail of a device d, with s0 its lowest stage: its first op is an F(s0,m) (every
//     op of a stage needs that stage's F, and F(s,m) for s > s0 on d needs F(s0,m) first), which
//     cannot start before head_d = sum_{t<s0} F_t + sum_{b<s0} x_b (those stages are elsewhere).
//     If every stage on d uses fused B, its last op is a B(s0,m) (a B(s,m) with s > s0 is followed
//     on d by B(s0,m)), after which the chain I/B(s0-1..0,m), W(0,m) still runs elsewhere:
//     tail_d = sum_{t<s0} bw_t + w_0 + sum_{b<s0} x_b; if some stage on d splits, a W can be last
//     and tail_d = 0. So makespan >= head_d + work_d + tail_d. For uniform GPipe/1F1B this is
//     (M+P-1)(F+B), the published makespan: the bound is tight there.
// With a data-parallel step (StageSpec::reduces_grad, red_s = reduce_grad_ms), REDUCE_GRAD(s) runs
// after the last backward of s: bound 2 adds red_s to the chain ending at stage s's backward; bounds 1
// and 3 add, after the device's last compute op (the last backward of one of its stages), the least
// red_s among its stages (in 3, the larger of that and tail_d: both start when that op ends). With
// FSDP, bound 1 also adds before the device's first compute op the least unshard_ms among its stages
// (0 when one of them is not sharded): that op waits for its stage's UNSHARD.
#pragma once

#include <vector>

#include "ir/problem.h"

namespace ps::verify_detail {

struct BoundParts {
  double device_work_ms = 0;    // bound 1 (max over devices)
  double critical_path_ms = 0;  // bound 2
  double head_work_tail_ms = 0; // bound 3 (max over devices)
  int bottleneck_device = -1;   // device attaining bound 3
  double best() const;
};

BoundParts lower_bound_parts(const Problem& pb);

}  // namespace ps::verify_detail
