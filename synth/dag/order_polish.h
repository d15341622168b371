// order_polish.h — a local search on a timed order: reorder the blocks of its critical chain, and
// move one op a few places along its resource.
//
// polish_order takes an order (every resource's list, comm streams included). First, with
// `block_moves`, a best-improvement descent on the critical chain (the ops that wait for each other
// back from the op that ends last): on each run of chain ops adjacent on one device it tries
// moving the run's first op later within the run, its last op earlier, an inner op to either end,
// and the first (last) op a few places before (after) the run — job-shop local search's
// neighbourhood, which only touches ops whose place can shorten the longest path — times them all
// (device orders; the comm streams first come, first served) and takes the best, until none is
// shorter or as long with a smaller sum of op ends. Then it tries, on every
// resource list and at every position, moving that op up to `reach` places earlier or later; each
// candidate is re-timed by evaluate_order (every edge, the caps) and replaces the order when it is
// shorter, or as long with a smaller sum of op ends (so a move that opens room elsewhere is kept and
// the search leaves plateaus; the pair (makespan, sum) only decreases, so it ends). Passes repeat
// until one finds nothing or `max_evaluations` orders have been timed, or `interrupt` is set (a
// SIGINT/SIGTERM: the best order so far is returned at once). The evaluations left go to seeded
// kicks: a few random moves from the best order, then both descents, kept when better. With
// `reach` 0 the block descent alone runs (no one-op moves, no kicks) and ends at its local optimum.
// Guarantees: the result is valid (evaluate_order accepted it) and never longer than the input;
// deterministic for a given seed (fixed visiting orders, seeded kicks); its cost is
// max_evaluations × one evaluate_order of the DAG.
#pragma once

#include <atomic>
#include <cstdint>

#include "synth/dag/op_dag.h"

namespace ps {

struct PolishResult {
  TimedOrder order;
  int64_t evaluations = 0;  // orders timed
  int improved = 0;         // moves kept
};

PolishResult polish_order(const OpDag& dag, const TimedOrder& order, int reach, int64_t max_evaluations,
                          uint64_t seed = 0, const std::atomic<bool>* interrupt = nullptr, bool block_moves = true);

}  // namespace ps
