// packing_bound.h — a lower bound that sees layer granularity, for the tuner's gap figures.
//
// Every device runs M microbatches of the layers placed on it, so the makespan of any partition,
// placement and order is at least M × (the largest per-device load), and the largest load is at
// least the optimum of packing the layers' F+I+W costs c_l onto P devices (P||Cmax), whatever the
// contiguity (c_l = layer_time_floor_ms: the cheaper of B and I + W for a type with a
// backward_ms). It complements synth/bounds/global_bound.h, whose total-work term assumes work can be split
// evenly: for a 32-layer model on 8 devices with a head, that term is 12 % below what any plan can
// reach, this one is exact.
//
// Two ways to bound the packing optimum:
//  * pigeonhole: with the costs sorted in decreasing order c_(1) ≥ c_(2) ≥ …, among the k·P+1 largest
//    layers some device holds k+1 of them, so it carries at least the k+1 smallest of those:
//    c_(kP−k+1) + … + c_(kP+1). The maximum of that over k ≥ 0 (k = 0 is the heaviest layer).
//  * exact: layers of equal cost form a type (real models have a handful: dense, MoE, attention,
//    head shards, ...); a search over how many layers of each type remain decides whether the layers
//    fit onto P devices of capacity T (each device takes one layer of the heaviest type left, then a
//    maximal set of the others; failed states are remembered), and a bisection on T finds the
//    largest capacity proven too small. The search stops after a fixed amount of work; an undecided
//    capacity counts as feasible, so the result stays a valid bound (only less tight).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/model.h"

namespace ps {

// Milliseconds: M × packing_bound(...).exact_ms; 0 when devices or microbatches < 1.
double layer_packing_bound_ms(const Model& model, int devices, int microbatches);

// The per-microbatch packing bound (ms) of the given layer costs on `devices` devices, and whether
// the exact search decided every capacity it tried (false: it ran out of work somewhere and the
// figure is the pigeonhole bound or a looser point of the bisection).
struct PackingBound {
  double pigeonhole_ms = 0;
  double exact_ms = 0;      // the bound: the largest capacity proven infeasible, at least
                            // max(pigeonhole_ms, mean load) (exactly that when it already fits)
  double packing_ms = 0;    // a packing found on the way (an upper bound on the optimum)
  bool decided = true;
};
PackingBound packing_bound(const std::vector<double>& layer_ms, int devices);

// Whole items onto bins that open late: bin k (k < offset_ms.size(), offsets in increasing order)
// holds items of total size at most C − offset_ms[k]. Returns a bound B such that for every C < B
// no assignment of the items fits (synth/bounds/global_bound.h uses it with the layers' M·c_l as
// items and each device's earliest start as its offset). At least the fractional bound — the least C
// with Σ_k max(0, C − offset_k) ≥ Σ items — and exactly the least feasible C up to 1e-6 relative
// when the search decides every capacity it tries. The search is packing_bound's over types of equal
// size, one bin after the other, each taking a maximal set of what is left (any packing can be
// rearranged so: moving a later bin's item into an earlier bin with room keeps it a packing); a
// search that runs out of work counts as feasible, so the figure stays a valid bound.
struct OffsetPacking {
  double fractional_ms = 0;  // the least C of the fractional relaxation
  double bound_ms = 0;       // the bound (>= fractional_ms)
  bool decided = true;       // false: a capacity was left undecided (the bound is only less tight)
};
OffsetPacking offset_packing_bound(const std::vector<double>& item_ms, const std::vector<double>& offset_ms);

// Whole items of any number of distinct sizes onto `devices` identical bins (P‖Cmax), asked about one
// capacity: returns a B such that no assignment fits any capacity below B. B is at least the cheap
// bound max(pigeonhole, Σ items / devices); when target_ms is above that, the search of packing_bound
// tries to prove target_ms too small, and then bisects above it, on the items rounded down to at most
// 12 sizes (the rounding that loses the least total size): an item made smaller only makes a packing
// easier, so a capacity too small for the rounded items is too small for the items. Every node the
// searches visit is taken from work_budget; a search that runs out counts as feasible (B stays the
// cheap bound or the last capacity proven too small), so the result is a bound whatever the budget.
double targeted_packing_bound(const std::vector<double>& item_ms, int devices, double target_ms,
                              int64_t& work_budget);

// Whole items with a size in each of D ≤ 8 dimensions (item_ms[i][k], ≥ 0) onto `devices` identical
// bins, where a bin fits C when in every dimension k its load is 0 or offset_ms[k] + load ≤ C: returns
// a B such that no assignment fits any C below B. B is at least the cheap bound (in each dimension the
// mean load plus the offset, and each item beside its offset); when target_ms is above that, a search
// tries to prove target_ms too small and then bisects above it, on the items rounded down to at most
// 16 vectors (the items of each kind, in the order given, cut into runs that each take their least
// size in every dimension: a smaller item only makes a packing easier). The search is packing_bound's
// over types (each bin first takes an item of the first type left, then a maximal set of what is
// left; failed states remembered). Every node comes out of work_budget; a search that runs out counts
// as feasible (B stays the cheap bound or the last capacity proven too small), so the result is a
// bound whatever the budget.
double vector_packing_bound(const std::vector<std::vector<double>>& item_ms, const std::vector<int>& item_kind,
                            const std::vector<double>& offset_ms, int devices, double target_ms,
                            int64_t& work_budget);

}  // namespace ps
