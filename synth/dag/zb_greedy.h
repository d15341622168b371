// zb_greedy.h — timing-aware greedy orders in the manner of Zero Bubble's scheduling heuristic.
//
// Zero Bubble (Qi et al., ICLR 2024, Section 3.1) builds its orders by simulating time: in the
// warm-up each device runs as many forwards as it can before its first backward arrives (how many
// follows from the simulated timing, not from a formula), in the steady state backwards come
// first and a W fills each gap where nothing else is ready, and W's run wherever memory needs
// them freed. This file builds orders that way on the op DAG (written from that description):
//
//   * One event loop over the devices: the device whose next decision comes first decides. A
//     decision at time t sees the ready times of every op whose predecessors are placed (every
//     edge kind: data, symmetry, memory), so what arrives before t is known exactly.
//   * At t the device runs, in this order of preference: a ready backward (I, B or R), deepest
//     stage first; else a ready forward that fits the memory cap (keeping one activation's room
//     for each later stage of the device) and would delay no known backward arrival by more than
//     the policy's slack (warm-up slack before the device's first backward, steady slack after);
//     else a pending W that would delay no known arrival by more than the W slack, or any W when
//     a forward waits on memory; else it waits for the next arrival.
//   * Transfers run when their producer ends, first come first served on both comm streams (the
//     final timing is evaluate_order's, op_dag.h, from the devices' compute orders alone).
//
// Guarantees: deterministic (no randomness; ties by op id); a returned order respects every edge
// and the caps (it went through evaluate_order); a policy that gets stuck on memory returns an
// error, never a partial order. zb_greedy_portfolio runs a fixed grid of slacks and forward
// preferences and returns the shortest (ties to the earlier policy); its cost is about
// (policies × ops × (ops available per device)²) steps: 80 runs of a ZB-V plan of 1,216 ops take
// about 0.2 s on one core.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"
#include "synth/dag/op_dag.h"

namespace ps {

struct ZbGreedyPolicy {
  // Slacks in units of the device's forward (or W) time: how long an F (W) may delay a backward
  // (any op) that is known to arrive before it would end. Negative: unlimited.
  double warmup_slack = 0;   // F before the device's first backward: 0.5 = half an F
  double steady_slack = 0;   // F after it
  double w_slack = 0;        // W: 0 = only into gaps it fits, < 0 = whenever nothing else is ready
  bool deep_forward_first = false;  // among ready F: the later stage first (else the oldest microbatch)
  // > 0: each device draws its own slacks, forward preference and W preference (the later stage's
  // W first, or the oldest) from small grids, seeded; the fields above are then unused.
  uint64_t seed = 0;

  std::string name() const;  // "zb-greedy warmup=0.5/steady=0/w=fill/deep"
};

Result<TimedOrder> zb_greedy_schedule(const OpDag& dag, const ZbGreedyPolicy& policy);

// How many seeded policies the portfolio runs after the 72 of its grid (80 in all).
constexpr int kZbGreedySeeded = 8;

// The portfolio's policies in the order they are tried.
std::vector<ZbGreedyPolicy> zb_greedy_policies();

struct ZbGreedyResult {
  TimedOrder best;
  std::string policy;  // the winner's name
  int tried = 0;
  int failed = 0;      // stuck on memory or refused by evaluate_order
};

// The shortest order of zb_greedy_policies(); fails (kInfeasible) when every policy got stuck. Once
// `interrupt` is set (a SIGINT/SIGTERM) no further policy starts: the best so far is returned.
Result<ZbGreedyResult> zb_greedy_portfolio(const OpDag& dag, const std::atomic<bool>* interrupt = nullptr);

}  // namespace ps
