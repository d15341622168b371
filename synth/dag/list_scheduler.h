// list_scheduler.h — greedy memory-aware list scheduler: the fast incumbent (and the tuner's inner
// loop).
//
// Guarantees:
//  * list_schedule() runs one priority policy (per op placed: a rescan of the changed devices'
//    available ops and a tournament-tree update over the devices); its result respects every edge of
//    the DAG (data, symmetry, memory) and every device's memory cap, or it fails (the policy got
//    stuck: every device waits on memory that only its own later ops could free).
//  * heuristic_schedule() runs a small fixed portfolio of policies (backward first vs forward first,
//    W filling bubbles vs W right after I, in-flight limits like 1F1B/ZB-H1/ZB-H2), then seeded
//    random perturbations of the best one's priorities, and always ends with the serial policy (one
//    microbatch at a time), which succeeds whenever the cap admits any schedule (`lean` leaves out
//    W-eager and lowest-stage-first policies). It returns the shortest, ties to the earlier policy,
//    after double justification of the four shortest (synth/dag/justify.h; the policy name then ends
//    in " + justified"). Deterministic (fixed seeds).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ir/status.h"
#include "synth/dag/op_dag.h"

namespace ps {

struct ListPolicy {
  enum class WMode : unsigned char {
    kFillGaps,    // W runs whenever no I/B/F is ready (fills bubbles)
    kStrictGaps,  // ... and only if it ends before the next known I/B/F arrival
    kEager,       // W right after its I (like a fused backward)
  };
  bool backward_first = true;   // I/B before F when both are ready
  WMode w_mode = WMode::kFillGaps;
  double inflight_factor = 0;   // > 0: stage s keeps at most ceil(f·(S−s)) microbatches in flight
  bool oldest_first = true;     // among ready F: oldest microbatch first (else lowest stage first)
  bool serial = false;          // one microbatch at a time through the whole pipeline
  bool wait_for_backward = false;  // an F does not start if an I/B arrives before it would end
  bool by_tail = false;         // priority = longest path from the op's start to the end (critical
                                // path first; memory edges make the cap's critical chains long);
                                // waits for a longer-path op that arrives before the chosen one ends
  double noise = 0;             // > 0: priority = class + noise·u(op), u a seeded random in [0, 1)
  uint64_t seed = 0;            // seed of u

  std::string name() const;     // "bwd-first/fill/inflight=1/oldest"
};

// With abandon_at: abandoned as soon as its makespan is sure to be >= abandon_at units (some device's
// last end plus the work it has left reaches it, or — where ops are placed in the order of their
// starts: every policy but the serial one, on DAGs without R ops — the latest start plus the most
// work a device has left); then *abandoned (if given) is set and the result is an error. A caller
// that keeps only orders shorter than abandon_at gets exactly what it would without it.
Result<TimedOrder> list_schedule(const OpDag& dag, const ListPolicy& policy,
                                 int64_t abandon_at = std::numeric_limits<int64_t>::max(), bool* abandoned = nullptr);

// The reference for tests: list_schedule with every device whose state changed rescanned for its
// choice (list_schedule compares an op released to an unchanged device with that device's choice)
// and the next op always taken from the tournament tree over the devices (list_schedule scans up to
// 32 leaves instead). The two give the same orders.
Result<TimedOrder> list_schedule_rescanning(const OpDag& dag, const ListPolicy& policy);

struct HeuristicOptions {
  bool portfolio = true;  // false: only the first policy (plus the serial fallback if it fails)
  int random_restarts = 32;  // then this many seeded perturbations of the best policy's priorities
  int justify_rounds = 4;    // then at most this many double-justification rounds (synth/dag/justify.h)
  // The tuner's lean portfolio (its search at M >= 4P): without the policies that run W right
  // after its I or forwards by lowest stage first (in long pipelines they do not win; docs/tuner.md,
  // "Lean portfolio"), 16 policies instead of 40.
  bool lean = false;
  // Give up on a policy's list schedule once it can no longer be kept (list_schedule's abandon_at):
  // the same result in less time (docs/tuner.md, "Giving up early"). false: run every one out.
  bool abandon = true;
  // Checked before each policy: once it returns true no further policy starts, and the result says
  // `stopped` (its order is the best of the policies that ran, if any, unjustified). For callers
  // with a wall-clock deadline that discard a stopped result (the tuner); empty: never stops.
  std::function<bool()> stop;
};

struct HeuristicResult {
  TimedOrder best;
  std::string policy;  // name of the winning policy
  int tried = 0;
  int failed = 0;      // policies that got stuck on memory
  int abandoned = 0;   // policies given up once they could no longer make the kept orders
  bool stopped = false;  // options.stop cut the portfolio short
};

// The portfolio's policies in the order they are tried.
std::vector<ListPolicy> heuristic_policies(const OpDag& dag);

// How many list schedules heuristic_schedule(dag, options) runs at most: its policies, the
// perturbations and the serial policy (where memory is capped). For sizing a portfolio to a budget.
int portfolio_runs(const OpDag& dag, const HeuristicOptions& options);
// Fails (kInfeasible) only if even the serial policy cannot respect the caps.
Result<HeuristicResult> heuristic_schedule(const OpDag& dag, const HeuristicOptions& options = {});

}  // namespace ps
