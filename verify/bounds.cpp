// bounds.cpp — see bounds.h.
#include "verify/bounds.h"

#include <algorithm>

#include "verify/verify.h"

namespace ps::verify_detail {

double BoundParts::best() const {
  return std::max({device_work_ms, critical_path_ms, head_work_tail_ms});
}

BoundParts lower_bound_parts(const Problem& pb) {
  BoundParts out;
  const int S = pb.num_stages();
  const double M = pb.microbatches;
  if (S == 0 || pb.microbatches <= 0) return out;
  auto dev = [&](int s) { return pb.stages[s].device; };
  auto x = [&](int b) { return dev(b) == dev(b + 1) ? 0.0 : pb.boundary_transfer_ms(StageId{b}); };
  // bw(s): the part of stage s's backward the input gradient waits for — I, or B when the stage
  // cannot split or its B is cheaper than its I; w(s): the least the rest of that backward takes
  // after it, so bw(s) + w(s) never exceeds either way of running the backward.
  auto bw = [&](int s) {
    const StageSpec& st = pb.stages[s];
    return st.split_backward ? std::min(compute_ms(pb, StageId{s}, OpType::I), compute_ms(pb, StageId{s}, OpType::B))
                             : compute_ms(pb, StageId{s}, OpType::B);
  };
  auto w = [&](int s) {
    const StageSpec& st = pb.stages[s];
    if (!st.split_backward) return 0.0;
    const double split_rest = compute_ms(pb, StageId{s}, OpType::W);
    // Without a fused time or an overhead, B = I + W exactly and the rest is W itself.
    if (!st.fused_bwd_ms && pb.op_overhead_ms == 0) return split_rest;
    return std::min(split_rest, compute_ms(pb, StageId{s}, OpType::B) - bw(s));
  };

  // red(s): the stage's data-parallel step, which runs after its last backward.
  auto red = [&](int s) { return pb.stages[s].reduces_grad ? pb.stages[s].reduce_grad_ms : 0.0; };

  int max_dev = 0;
  for (int s = 0; s < S; ++s) max_dev = std::max(max_dev, dev(s));
  // dp_tail[d]: after a device's last compute op — the last backward of one of its stages — at least
  // the least data-parallel step among its stages still runs.
  std::vector<double> dp_tail(max_dev + 1, -1.0);
  // dp_head[d]: the least UNSHARD among its stages (0 when one is not FSDP-sharded).
  std::vector<double> dp_head(max_dev + 1, -1.0);
  std::vector<double> work(max_dev + 1, 0.0);
  std::vector<int> lowest(max_dev + 1, -1);
  std::vector<char> any_split(max_dev + 1, 0);
  for (int s = 0; s < S; ++s) {
    const StageSpec& st = pb.stages[s];
    if (st.device < 0) continue;
    work[st.device] += M * (compute_ms(pb, StageId{s}, OpType::F) + pb.least_backward_ms(StageId{s}) +
                            (st.recomputes() ? compute_ms(pb, StageId{s}, OpType::R) : 0.0));
    if (lowest[st.device] < 0) lowest[st.device] = s;
    if (st.split_backward) any_split[st.device] = 1;
    dp_tail[st.device] = dp_tail[st.device] < 0 ? red(s) : std::min(dp_tail[st.device], red(s));
    // A device's first compute op belongs to one of its stages; on an FSDP stage it waits for the
    // stage's UNSHARD, which starts at 0 at the earliest.
    const double gather = st.fsdp ? pb.stages[s].unshard_ms : 0.0;
    dp_head[st.device] = dp_head[st.device] < 0 ? gather : std::min(dp_head[st.device], gather);
  }
  for (double& t : dp_tail) t = std::max(t, 0.0);
  for (double& t : dp_head) t = std::max(t, 0.0);
  for (int d = 0; d <= max_dev; ++d)
    out.device_work_ms = std::max(out.device_work_ms, dp_head[d] + work[d] + dp_tail[d]);

  // Prefix sums: fwd[s] = sum_{t<s} F_t + x_t; bwd_pre[s] = sum_{t<s} bw_t + x_t (t<s boundaries).
  std::vector<double> fwd(S + 1, 0.0), bwd_pre(S + 1, 0.0);
  for (int s = 0; s < S; ++s) {
    const double xs = s + 1 < S ? x(s) : 0.0;
    fwd[s + 1] = fwd[s] + compute_ms(pb, StageId{s}, OpType::F) + xs;
    bwd_pre[s + 1] = bwd_pre[s] + bw(s) + xs;
  }
  // fwd[S] counts all forwards and all boundaries once; the backward from stage S-1 down to s
  // crosses boundaries s..S-2 and runs bw_t for t in [s, S-1].
  // The last stage's R (when it recomputes) sits between its F and its backward on one device.
  const StageSpec& last = pb.stages[S - 1];
  const double r_last = last.recomputes() ? compute_ms(pb, StageId{S - 1}, OpType::R) : 0.0;
  for (int s = 0; s < S; ++s) {
    const double back = (bwd_pre[S] - bwd_pre[s]);  // bw_t for t >= s plus x_b for b >= s
    out.critical_path_ms = std::max(out.critical_path_ms, fwd[S] + r_last + back + w(s) + red(s));
  }

  for (int d = 0; d <= max_dev; ++d) {
    const int s0 = lowest[d];
    if (s0 < 0) continue;
    const double head = fwd[s0];  // F_t + x_t for t < s0
    const double tail = any_split[d] || s0 == 0 ? 0.0 : bwd_pre[s0] + w(0);
    // The backward chain after d's last op and d's own data-parallel step both start when that op ends.
    const double v = head + work[d] + std::max(tail, dp_tail[d]);
    if (v > out.head_work_tail_ms) {
      out.head_work_tail_ms = v;
      out.bottleneck_device = d;
    }
  }
  return out;
}

}  // namespace ps::verify_detail

namespace ps {
double lower_bound_ms(const Problem& problem) { return verify_detail::lower_bound_parts(problem).best(); }
}  // namespace ps
