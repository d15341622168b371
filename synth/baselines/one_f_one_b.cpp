// one_f_one_b.cpp — GPipe, 1F1B and interleaved 1F1B (fused backward B everywhere).
//
// Sources: GPipe (Huang et al. 2019); 1F1B as in PipeDream-Flush (Narayanan et al. 2021) and
// Megatron-LM's forward_backward_pipelining_without_interleaving; interleaved 1F1B as in
// Megatron-LM (Narayanan et al. 2021, forward_backward_pipelining_with_interleaving). Rank r of P
// devices.
#include <algorithm>

#include "synth/baselines/program_builder.h"
#include "synth/baselines/baselines.h"

namespace ps {

using baseline_detail::ProgramBuilder;

// GPipe: every device runs all M forwards, then all M backwards, microbatches in order.
Result<Schedule> make_gpipe(const Problem& problem) {
  PS_RETURN_IF_ERROR(check_baseline_shape(problem, BaselineKind::kGPipe));
  int P = problem.devices, M = problem.microbatches;
  std::vector<ProgramBuilder> b(P);
  for (int r = 0; r < P; ++r) {
    for (int m = 0; m < M; ++m) b[r].F(r, m);
    for (int m = 0; m < M; ++m) b[r].B(r, m);
  }
  return baseline_detail::finish_baseline(problem, BaselineKind::kGPipe, std::move(b));
}

// 1F1B: rank r runs w = min(P−r−1, M) warm-up forwards, then alternates one forward and one
// backward, then drains the remaining w backwards.
Result<Schedule> make_1f1b(const Problem& problem) {
  PS_RETURN_IF_ERROR(check_baseline_shape(problem, BaselineKind::k1F1B));
  int P = problem.devices, M = problem.microbatches;
  std::vector<ProgramBuilder> b(P);
  for (int r = 0; r < P; ++r) {
    int w = std::min(P - r - 1, M);
    for (int m = 0; m < w; ++m) b[r].F(r, m);
    for (int i = 0; i < M - w; ++i) {
      b[r].F(r, w + i);
      b[r].B(r, i);
    }
    for (int i = M - w; i < M; ++i) b[r].B(r, i);
  }
  return baseline_detail::finish_baseline(problem, BaselineKind::k1F1B, std::move(b));
}

// Interleaved 1F1B: V model chunks per rank, chunk c of rank r is stage c·P + r. The k-th
// "virtual microbatch" of a rank (k = 0 .. M·V−1) belongs to chunk (k mod PV) / P for forwards
// (reversed, V−1−that, for backwards) and to microbatch (k / PV)·P + k mod P: microbatches run in
// groups of P through one chunk before the next. Warm-up: 2(P−r−1) + (V−1)·P virtual forwards
// (all of them when M == P), then one forward and one backward alternate, then the drain.
Result<Schedule> make_interleaved_1f1b(const Problem& problem) {
  PS_RETURN_IF_ERROR(check_baseline_shape(problem, BaselineKind::kInterleaved1F1B));
  int P = problem.devices, M = problem.microbatches;
  int V = problem.num_stages() / P;
  int total = M * V;
  auto chunk_of = [&](int k, bool forward) {
    int c = (k % (P * V)) / P;
    return forward ? c : V - 1 - c;
  };
  auto mb_of = [&](int k) { return (k / (P * V)) * P + k % P; };
  std::vector<ProgramBuilder> b(P);
  for (int r = 0; r < P; ++r) {
    int w = M == P ? total : std::min(2 * (P - r - 1) + (V - 1) * P, total);
    auto fwd = [&](int k) { b[r].F(chunk_of(k, true) * P + r, mb_of(k)); };
    auto bwd = [&](int k) { b[r].B(chunk_of(k, false) * P + r, mb_of(k)); };
    for (int k = 0; k < w; ++k) fwd(k);
    for (int k = 0; k < total - w; ++k) {
      fwd(k + w);
      bwd(k);
    }
    for (int k = total - w; k < total; ++k) bwd(k);
  }
  return baseline_detail::finish_baseline(problem, BaselineKind::kInterleaved1F1B, std::move(b));
}

}  // namespace ps
