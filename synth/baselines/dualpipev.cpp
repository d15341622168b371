// dualpipev.cpp — DualPipeV: DeepSeek's DualPipe folded into a V (two stages per device).
//
// Source: DeepSeek-V3 technical report (arXiv:2412.19437, DualPipe) and the open-source DualPipe
// repository's DualPipeV; the order is the one PyTorch ships as
// torch.distributed.pipelining.ScheduleDualPipeV. Its "overlapped F+B" steps (a forward of one
// chunk and a fused backward of the other run together, hiding the MoE all-to-all) appear here as
// the forward followed by the backward on the device's single compute stream. Rank r of P devices,
// chunk 0 = stage r, chunk 1 = stage 2P−1−r; each I queues its W, which runs later, oldest first.
#include <deque>
#include <utility>

#include "synth/baselines/program_builder.h"
#include "synth/baselines/baselines.h"

namespace ps {

using baseline_detail::ProgramBuilder;

// Steps of rank r (M >= 2P):
//   1. 2(P−r−1) × F0                         2. (r+1) × (F0, F1)
//   3. (P−r−1) × (I1, next W, F1)            4. (M−2P+r+1) × (F0, B1, F1, B0)
//   5. (P−r−1) × (B1, F1, B0)                6. (r+1) × (bwd1, bwd0), switching B → I halfway
//   7. (P−r−1) × (next W, I0)                8. (r+1) × next W
Result<Schedule> make_dualpipev(const Problem& problem) {
  PS_RETURN_IF_ERROR(check_baseline_shape(problem, BaselineKind::kDualPipeV));
  int P = problem.devices, M = problem.microbatches;
  std::vector<ProgramBuilder> b(P);
  for (int r = 0; r < P; ++r) {
    ProgramBuilder& out = b[r];
    const int s[2] = {r, 2 * P - 1 - r};
    int fwd[2] = {0, 0}, bwd[2] = {0, 0};       // next microbatch per chunk
    std::deque<std::pair<int, int>> pending_w;  // (stage, microbatch), oldest first
    auto F = [&](int c) { out.F(s[c], fwd[c]++); };
    auto B = [&](int c) { out.B(s[c], bwd[c]++); };
    auto I = [&](int c) {
      pending_w.emplace_back(s[c], bwd[c]);
      out.I(s[c], bwd[c]++);
    };
    auto next_w = [&] {
      if (pending_w.empty()) return;
      out.W(pending_w.front().first, pending_w.front().second);
      pending_w.pop_front();
    };
    for (int k = 0; k < 2 * (P - r - 1); ++k) F(0);
    for (int k = 0; k < r + 1; ++k) {
      F(0);
      F(1);
    }
    for (int k = 0; k < P - r - 1; ++k) {
      I(1);
      next_w();
      F(1);
    }
    for (int k = 0; k < M - 2 * P + r + 1; ++k) {
      F(0);
      B(1);
      F(1);
      B(0);
    }
    for (int k = 0; k < P - r - 1; ++k) {
      B(1);
      F(1);
      B(0);
    }
    // Step 6: the second half of these backwards is split (I now, W later) so the W's can fill
    // the drain. Odd ranks switch before chunk 1's backward of the middle step, even ranks after.
    bool split = false;
    int steps6 = r + 1;
    for (int k = 0; k < steps6; ++k) {
      if (k == steps6 / 2 && r % 2 == 1) split = true;
      split ? I(1) : B(1);
      if (k == steps6 / 2 && r % 2 == 0) split = true;
      split ? I(0) : B(0);
    }
    for (int k = 0; k < P - r - 1; ++k) {
      next_w();
      split ? I(0) : B(0);
    }
    for (int k = 0; k < r + 1; ++k) next_w();
    PS_ASSERT(fwd[0] == M && fwd[1] == M && bwd[0] == M && bwd[1] == M && pending_w.empty(),
              "DualPipeV must emit every op of every microbatch exactly once");
  }
  return baseline_detail::finish_baseline(problem, BaselineKind::kDualPipeV, std::move(b));
}

}  // namespace ps
