// order_polish.h — a local search on a timed order: move one op a few places along its resource.
//
// polish_order takes an order (every resource's list, comm streams included) and tries, on every
// resource list and at every position, moving that op up to `reach` places earlier or later; each
// candidate is re-timed by evaluate_order (every edge, the caps) and replaces the order when it is
// shorter, or as long with a smaller sum of op ends (so a move that opens room elsewhere is kept and
// the search leaves plateaus; the pair (makespan, sum) only decreases, so it ends). Passes repeat
// until one finds nothing or `max_evaluations` orders have been timed, or `interrupt` is set (a
// SIGINT/SIGTERM: the best order so far is returned at once).
// Guarantees: the result is valid (evaluate_order accepted it) and never longer than the input;
// deterministic (fixed visiting order, no randomness); its cost is max_evaluations × one
// evaluate_order of the DAG.
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
                          uint64_t seed = 0, const std::atomic<bool>* interrupt = nullptr);

}  // namespace ps
