// zero_bubble.cpp — Zero Bubble schedules: ZB-H1, ZB-H2 and ZB-V (backward split into I and W).
//
// Source: Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism" (ICLR 2024, arXiv:2401.10241),
// Section 3 (handcrafted ZB-H1 / ZB-H2) and Section 6 (ZB-V); the ZB-V order is the one PyTorch
// ships as torch.distributed.pipelining.ScheduleZBVZeroBubble. Rank r of P devices.
#include <algorithm>
#include <deque>
#include <utility>

#include "synth/baselines/program_builder.h"
#include "synth/baselines/baselines.h"

namespace ps {

using baseline_detail::ProgramBuilder;

namespace {

// The ZB-H family on one stage per device: `warmup` forwards, then (forward, I) pairs, then the
// remaining I's (the cool-down). After every I the oldest W's run until at most `steady_deferred`
// W's are pending (`cooldown_deferred` in the cool-down); the last pending ones run at the very
// end, where they fill the drain bubble.
void zb_h_program(ProgramBuilder& b, int stage, int M, int warmup, int steady_deferred,
                  int cooldown_deferred) {
  int next_w = 0, done_i = 0;
  auto run_ws = [&](int keep) {
    while (done_i - next_w > keep) b.W(stage, next_w++);
  };
  for (int m = 0; m < warmup; ++m) b.F(stage, m);
  for (int i = 0; i < M - warmup; ++i) {
    b.F(stage, warmup + i);
    b.I(stage, i);
    ++done_i;
    run_ws(steady_deferred);
  }
  for (int i = M - warmup; i < M; ++i) {
    b.I(stage, i);
    ++done_i;
    run_ws(cooldown_deferred);
  }
  run_ws(0);
}

}  // namespace

// ZB-H1: 1F1B's warm-up (P−r−1 forwards) and 1F1B's F/I order, with rank r keeping up to r W's
// pending: in-flight microbatches per rank stay at most P, the 1F1B peak.
Result<Schedule> make_zb_h1(const Problem& problem) {
  PS_RETURN_IF_ERROR(check_baseline_shape(problem, BaselineKind::kZBH1));
  int P = problem.devices, M = problem.microbatches;
  std::vector<ProgramBuilder> b(P);
  for (int r = 0; r < P; ++r) zb_h_program(b[r], r, M, std::min(P - r - 1, M), r, r);
  return baseline_detail::finish_baseline(problem, BaselineKind::kZBH1, std::move(b));
}

// ZB-H2: twice the warm-up forwards, 2(P−r−1), so the bubble before the first I is filled; in the
// steady phase rank r keeps up to 2r W's pending, so that in the drain the I's of later ranks run
// ahead of their W's and reach rank 0 early (the "parallelogram" of the paper's Figure 3). The
// paper draws it for F = I = W and M >= 2P only; our rendering for other shapes: with M >= 2P the
// drain keeps the 2r W's for the very end, with M < 2P it runs them into the drain's waits down to
// r (ZB-H1's drain), which is never slower than ZB-H1 (tests sweep P <= 8, M <= 5P and several
// F:I:W ratios). Rank 0 holds up to 2P−1 microbatches' activations (about twice 1F1B), rank r at
// most 2(P−r)−1 activations plus 2r+1 stashes.
Result<Schedule> make_zb_h2(const Problem& problem) {
  PS_RETURN_IF_ERROR(check_baseline_shape(problem, BaselineKind::kZBH2));
  int P = problem.devices, M = problem.microbatches;
  std::vector<ProgramBuilder> b(P);
  for (int r = 0; r < P; ++r)
    zb_h_program(b[r], r, M, std::min(2 * (P - r - 1), M), 2 * r, M >= 2 * P ? 2 * r : r);
  return baseline_detail::finish_baseline(problem, BaselineKind::kZBH2, std::move(b));
}

// ZB-V: rank r holds chunk 0 = stage r and chunk 1 = stage 2P−1−r. The order is built for
// n = max(M, 2P−1) microbatches and the ops of microbatches >= M are then dropped (PyTorch does
// the same), which keeps every dependency since whole microbatches disappear.
//   1. 2(P−r)−1 × F0            2. r × (F1, F0)              3. (P−r) × (F1, I1, W1)
//   4. steady, until all forwards are issued: (F0 if any left), I0, W0, F1, I1, W1
//   5. r × (I0, I1)             6. (P−r) × (I0, oldest W0)   7. remaining W1, then remaining W0
Result<Schedule> make_zbv(const Problem& problem) {
  PS_RETURN_IF_ERROR(check_baseline_shape(problem, BaselineKind::kZBV));
  int P = problem.devices, M = problem.microbatches;
  int n = std::max(M, 2 * P - 1);
  std::vector<ProgramBuilder> b(P);
  for (int r = 0; r < P; ++r) {
    ProgramBuilder full;
    int s0 = r, s1 = 2 * P - 1 - r;
    int f0 = 0, f1 = 0, i0 = 0, i1 = 0;
    for (int k = 0; k < 2 * (P - r) - 1; ++k) full.F(s0, f0++);
    for (int k = 0; k < r; ++k) {
      full.F(s1, f1++);
      full.F(s0, f0++);
    }
    for (int k = 0; k < P - r; ++k) {
      full.F(s1, f1++);
      full.I(s1, i1);
      full.W(s1, i1++);
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n) full.F(s0, f0++);
      full.I(s0, i0);
      full.W(s0, i0++);
      full.F(s1, f1++);
      full.I(s1, i1);
      full.W(s1, i1++);
    }
    int w0 = i0, w1 = i1;
    for (int k = 0; k < r; ++k) {
      full.I(s0, i0++);
      full.I(s1, i1++);
    }
    for (int k = 0; k < P - r; ++k) {
      full.I(s0, i0++);
      full.W(s0, w0++);
    }
    while (w1 < i1) full.W(s1, w1++);
    while (w0 < i0) full.W(s0, w0++);
    PS_ASSERT(f0 == n && f1 == n && i0 == n && i1 == n && w0 == n && w1 == n,
              "ZB-V must emit every op of its n microbatches exactly once");
    for (const Action& a : full.ops)
      if (a.mb.value() < M) b[r].ops.push_back(a);
  }
  return baseline_detail::finish_baseline(problem, BaselineKind::kZBV, std::move(b));
}

}  // namespace ps
