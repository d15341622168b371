// dag_bounds.h — lower bounds on the makespan of an op DAG that see the memory cap.
//
// Guarantees: every figure returned is a valid lower bound on the makespan of any schedule of the
// DAG (all its edges, including the memory edges of op_dag.h, which the cap implies under microbatch
// symmetry). The memory cap enters through those edges: an F that must wait for an earlier
// microbatch's backward gets a late head, and the device's forced idle time shows up in
//  * the critical path (longest path through data, symmetry and memory edges), and
//  * the single-resource relaxation: device d (or its comm stream) as one machine with release
//    times (head), processing times and delivery times (tail), preemption allowed — Jackson's
//    preemptive schedule solves that relaxation exactly in O(n log n).
//  * the destructive bound (destructive_lower_bound): a trial makespan C gives every op the window
//    [head, C − tail] (earliest start, latest completion), and constraint propagation narrows the
//    windows until nothing changes. Every rule removes only start times that no schedule of
//    makespan ≤ C can use, so an empty window (or an overloaded resource) proves that no schedule
//    has makespan ≤ C: C + 1 is a lower bound. The rules:
//      - edges: start(v) ≥ start(u) + dur(u) + delay, both ways (earliest starts forwards, latest
//        completions backwards); a cycle of positive length through the edges and the search's
//        decided precedences has no schedule and refutes at once (an op queued more than n + 1
//        times in one propagation along the edges proves one);
//      - per resource (each device, each comm stream; a transfer is on two), which runs one op at a
//        time without preemption: the overload check (for every set Ω of its ops, est(Ω) + p(Ω) ≤
//        lct(Ω) — Jackson's preemptive check with deadlines), edge finding, detectable precedences
//        and not-first/not-last, in both time directions (Vilím's Θ-Λ-tree algorithms, O(n log n)
//        per resource).
//    Where propagation alone leaves C open, a complete search decides it: take two ops of one
//    resource whose order is open, try each order (every schedule takes one of the two), propagate
//    after each decision. C is refuted only when every branch is refuted by the rules above; a
//    branch where every pair is ordered is a schedule of makespan ≤ C (returned, timed, when it
//    also respects the caps). The memory caps enter through the DAG's memory edges only (with
//    several stages per device the encoding's memory sums are stronger), so this bounds a
//    relaxation, which keeps it valid.
//    Trial makespans run from a known lower bound up to `upper` (a known schedule's makespan):
//    propagation alone by doubling steps while they are refuted, then bisection; then the search
//    by bisection (each trial with at most half of the budget left; the first trial that runs out
//    ends it). Only refuted makespans move the bound. Deterministic: fixed op, resource and
//    branching orders, and work caps in elementary steps (not time) — when a cap is spent, the
//    bound proven so far is returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "synth/dag/op_dag.h"

namespace ps {

struct DagBound {
  int64_t units = 0;   // the bound, time units
  std::string reason;  // "critical path" or "device 3 (single-resource relaxation ...)"
  int device = -1;     // the resource whose relaxation gives the bound, -1 for the critical path
};

// Jackson's preemptive bound for one resource (a device, or P + d for device d's comm stream).
int64_t device_relaxation_bound(const OpDag& dag, int resource);

// max(critical path, every device's relaxation).
DagBound dag_lower_bound(const OpDag& dag);

// Elementary steps of destructive_lower_bound per second, assumed when a time budget is turned into
// a work cap (about what one otherwise idle core does).
uint64_t bound_steps_per_second();

struct DestructiveOptions {
  // A known lower bound to start from (it is raised to dag_lower_bound's when lower).
  int64_t start = 0;
  // A known schedule's makespan: the bound never exceeds it and no trial at or above it is run.
  int64_t upper = std::numeric_limits<int64_t>::max();
  // Elementary steps (tree updates, edge relaxations, pairs looked at) for propagation alone.
  uint64_t work_cap = 20'000'000;
  // Steps for the search on top (0: no search).
  uint64_t search_work = 0;
  // Set: the trial under way stops as if out of work, and no other runs (the bound found so far is
  // valid). Null: never.
  const std::atomic<bool>* interrupt = nullptr;
};

struct DestructiveBound {
  DagBound bound;       // >= the starting bound, <= upper
  int trials = 0;       // trial makespans tried
  int64_t nodes = 0;    // search nodes
  uint64_t work = 0;    // elementary steps used
  bool capped = false;  // a work cap stopped a trial (the bound is still valid)
  // The most window changes held at once for the search to undo (24 bytes each): at most the DAG's
  // ops times (1 + the search's depth).
  size_t trail_peak = 0;
  // The best schedule the search found, timed by evaluate_order (valid on the DAG, within every
  // cap), when one beats `upper`.
  std::optional<TimedOrder> order;
};

// The destructive bound (see above); its bound is >= dag_lower_bound(dag) and <= options.upper.
DestructiveBound destructive_lower_bound(const OpDag& dag, const DestructiveOptions& options = {});

// The windows propagation (no search) leaves for a trial makespan (at most 2^60): every schedule
// of makespan <= `makespan` starts op i in [est[i], lct[i] - dur(i)]. Returns false when propagation refutes the
// makespan (no such schedule; then *refuted is set) or the work cap runs out (the windows are
// still valid, just not a fixpoint). *work_used (when given) gets the elementary steps it took.
bool propagate_windows(const OpDag& dag, int64_t makespan, std::vector<int64_t>& est,
                       std::vector<int64_t>& lct, bool* refuted = nullptr,
                       uint64_t work_cap = 20'000'000, uint64_t* work_used = nullptr);

}  // namespace ps
