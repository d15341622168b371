// packing_lp.h — the configuration LP of a vector packing: a lower bound that keeps every dimension.
//
// The question is packing_bound.h's vector_packing_bound's: whole items, each with a size in every
// dimension k (its work inside window k), dealt to `devices` identical bins, where a bin fits a
// capacity C when in every dimension its load is 0 or offset_k + load ≤ C. That search decides a few
// dimensions on rounded items; this bound takes every dimension and the items as they are, and
// refutes a capacity with the LP relaxation of the packing over its *configurations* (Gilmore and
// Gomory): the sets of items that fit one bin at C.
//
// Weights y_i ≥ 0 on the items such that no set that fits one bin weighs more than 1 (a dual
// solution of the LP "cover every item with the fewest configurations") prove that no packing onto
// `devices` bins exists when Σ y_i > devices: each bin holds weight at most 1. The weights come from a
// revised simplex on that LP, whose columns (configurations) are generated as needed: the pricing
// step is a 0/1 multi-dimensional knapsack (the heaviest set under y that fits), first by greedy
// orders, then by a branch and bound. The proof never rests on the simplex's arithmetic: a capacity
// counts as refuted only when the exact knapsack (every node searched or pruned by a valid bound, a
// fit tested with a small slack in the items' favour) shows the heaviest fitting set under the
// weights y⁺ = max(y, 0) to weigh v with Σ y⁺ / v > devices · (1 + 1e-9).
//
// Every pivot and search node comes out of work_budget; a capacity left undecided counts as
// feasible, so the result is a bound whatever the budget.
#pragma once

#include <cstdint>
#include <vector>

namespace ps {

struct PackingLpBound {
  double bound_ms = 0;  // no packing fits any capacity below it: at least floor_ms
  int capacities = 0;   // capacities asked
  int columns = 0;      // configurations that entered the simplex's basis, over all capacities
  bool decided = true;  // false: some capacity was left undecided (the bound is only less tight)
};

// item_ms: items × dims sizes, row-major (≥ 0); offset_ms: dims. floor_ms: a capacity already known
// to be too small (the other terms), ceiling_ms: one known to fit (a dealing's value) or any larger
// figure; the bisection works between the two, to 1e-4 relative.
PackingLpBound vector_packing_lp_bound(const std::vector<double>& item_ms, int items,
                                       const std::vector<double>& offset_ms, int devices, double floor_ms,
                                       double ceiling_ms, int64_t& work_budget);

}  // namespace ps
