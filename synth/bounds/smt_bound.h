// smt_bound.h — lower bounds proven by Z3 on one-resource relaxations of the op DAG.
//
// The relaxation of resource r (a device's compute ops, or a device's comm stream) keeps only the
// ops of r and asks whether they fit a trial makespan T:
//  * windows: every schedule of the whole DAG with makespan <= T starts op i within
//    [est_i, lct_i - dur_i], the windows constraint propagation leaves at T (dag_bounds.h:
//    propagate_windows; at least [head_i, T - tail_i]);
//  * minimal time lags: where the DAG has a path from a to b (both on r), start_b >= start_a +
//    L(a, b), L the longest such path (durations and delays of everything on it, other resources'
//    ops included) — stronger than "a before b";
//  * no overlap: for every pair of r's ops that no path orders, a Boolean order literal o_ab with
//    o_ab -> start_a + dur_a <= start_b and !o_ab -> start_b + dur_b <= start_a (difference atoms,
//    smt.arith.solver = 1, as in synth/z3/encode.h);
//  * the device's memory cap (compute relaxations of a memory-limited DAG): before F(f) allocates,
//    live activations and stashes <= cap, the pseudo-Boolean sum of encode.h over the same order
//    literals (an F before f adds its activation, an I/W/B after f adds back what it frees).
// Every schedule of the DAG with makespan <= T satisfies all of these, so an UNSAT proves that no
// schedule has makespan <= T: T + 1 is a lower bound on the DAG's optimum (a proof under the
// exact memory numbers when the DAG's bounds are: OpDag::bounds_are_proofs).
//
// The search: resources in descending order of Jackson's preemptive bound (the bottleneck first);
// each is first asked at the lowest open makespan (SAT there: it cannot help, and larger makespans
// only widen its windows), and one that refutes it gallops upwards, then bisects, until a trial is
// SAT or unknown; the next resource starts from the raised bound. Trials stay below `upper`.
// A relaxation is skipped when loading it would take more than its rlimit share (the load-rate
// reasoning of solve.h: kLoadRlimitPerUnit per open pair, lag and 4 per op).
//
// Deterministic for a fixed seed and rlimit: every check gets a fixed rlimit share, propagation a
// fixed work cap, and the order of trials depends on their outcomes only (the wall-clock cap and
// an interrupt can end it earlier; the bound proven so far stands).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "ir/status.h"
#include "synth/dag/op_dag.h"

namespace ps {

struct SmtBoundOptions {
  uint64_t rlimit = 0;        // Z3 budget of the whole step (propagation charged at its rate); 0 = time_limit_s × rlimit_per_second()
  double time_limit_s = 2;    // wall-clock cap of the whole step
  unsigned seed = 0;          // smt.random_seed
  bool windows = true;        // true: propagated windows at each trial; false: [head, T - tail] only
  bool memory = true;         // encode the device's memory cap (when the DAG has one)
  bool pairs = true;          // after the single resources, two devices of adjacent stages together
  uint64_t propagation_work = 20'000'000;  // elementary steps per trial's propagation
  const std::atomic<bool>* interrupt = nullptr;  // set: the check under way stops, none starts
};

struct SmtBound {
  int64_t units = 0;          // the bound: >= lower, <= upper
  bool raised = false;        // units > lower
  bool by_z3 = false;         // the last refutation was a Z3 UNSAT (else propagation alone)
  int device = -1;            // the resource whose relaxation proved it (P + d: comm stream of d)
  int checks = 0;             // Z3 checks
  int trials = 0;             // trial makespans (propagations)
  int relaxations = 0;        // relaxations built
  int skipped = 0;            // relaxations too large to load in their share
  uint64_t rlimit_used = 0;   // Z3's resource units, propagation's work converted included
  std::string reason;         // "z3 relaxation: device 3 alone (...) refutes ...", or "destructive: ... by
                              // propagation" when a trial's propagation alone refuted it; empty when not raised
};

// The bound (see above) between `lower` (a proven bound) and `upper` (a known schedule's makespan).
// Errors: a Z3 exception (kRuntime).
Result<SmtBound> smt_lower_bound(const OpDag& dag, int64_t lower, int64_t upper, const SmtBoundOptions& options);

}  // namespace ps
