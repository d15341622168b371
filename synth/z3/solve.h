// solve.h — the anytime Z3 driver: improve an incumbent order and prove how good it is.
//
// Steps (each bounded by the budget; docs/synth.md explains why this order):
//  1. If the incumbent's makespan equals the lower bound: optimal, no Z3 call.
//  2. Solution-guided check: C <= incumbent with the incumbent's orientations as assumptions. It is
//     satisfiable by construction and leaves Z3's saved phases on the incumbent. With a device hint,
//     a second check fixes only the hint's compute orders and asks for a better makespan.
//  3. Large-neighbourhood search: keep the incumbent's orientations of every pair outside a window
//     of microbatches, ask for C <= best - 1, slide the window.
//  4. Linear descent: C <= best - 1 without assumptions; SAT gives a better incumbent, UNSAT proves
//     the incumbent optimal (bound = best).
// Guarantees:
//  * The returned order is always valid on the DAG (edges, caps) and never worse than the incumbent.
//  * `bound` is a proven lower bound on the DAG's optimum in time units (the input bound, raised to
//    best when Z3 proved UNSAT); `optimal` is true only then (or when step 1 applies). Without
//    proofs (SolveOptions::proofs false, or a DAG whose memory rounding makes its caps stricter
//    than the exact ones: OpDag::bounds_are_proofs) an UNSAT still steers the search — nothing
//    better exists under the encoded caps — but `bound` stays the input bound and `optimal` needs
//    the incumbent to meet it.
//  * Deterministic for a fixed seed and rlimit budget as long as the wall-clock cap is not hit:
//    every check gets a fixed rlimit share, and the portfolio (contexts > 1) combines the results of
//    each round in context order, never in finishing order.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ir/status.h"
#include "synth/dag/op_dag.h"

namespace ps {

struct SolveProgress {
  int64_t incumbent = 0;  // units
  int64_t bound = 0;      // units
  double elapsed_s = 0;
  std::string phase;      // "guided", "lns", "descent"
};

struct SolveOptions {
  double time_limit_s = 10;  // wall-clock cap for all checks together
  uint64_t rlimit = 0;       // total Z3 resource budget, all contexts together;
                             // 0 = time_limit_s × rlimit_per_second() × contexts
  unsigned seed = 0;
  int contexts = 1;          // portfolio: separate Z3 contexts (threads) with seeds seed, seed+1, ...
  int lns_window = 8;        // microbatches per LNS window; 0 disables LNS
  bool memory = true;        // encode the caps
  bool proofs = true;        // false: UNSATs raise no bound and prove no optimality (see above)
  bool warm_start = false;   // seed every context with the incumbent as Z3's initial values (encode.h)
  std::string dump_smt2;     // write the encoding (before solving) to this path, if not empty
  std::function<void(const SolveProgress&)> progress;  // called on each new incumbent/bound
  std::function<void(const TimedOrder&)> on_incumbent;  // called with each better order Z3 finds
  // Optional: device orders (order[0..devices-1]) of an order found on a relaxation (e.g. the
  // no-queue model). After the guided check, one check asks for C <= best - 1 with the hint's
  // orientations of every pair of compute ops as assumptions: only the comm streams are left to
  // order, a small problem that often turns the relaxation's optimum into this model's.
  std::optional<TimedOrder> device_hint;
  // Set (by a signal handler, say) to stop: a check under way is interrupted, none starts, and the
  // incumbent stands (status "stopped: interrupted"). Null: never.
  const std::atomic<bool>* interrupt = nullptr;
};

// Whether the Z3 built against has initial values, so that SolveOptions::warm_start (and
// WindowOptions::warm_start) does something (Z3 4.13.1 and newer).
bool warm_start_available();

// rlimit units that loading one unit of encoding size (an open pair, or a quarter of an op's
// constraints) costs, measured on Z3 4.8.12; Z3 5.4 spends a budget in about the same time
// (docs/synth.md, "Which Z3").
inline constexpr uint64_t kLoadRlimitPerUnit = 150;

// Destroying the encodings (Z3 freeing their terms) cannot be interrupted either, and on a large plan
// it takes seconds after the last check: 1.9 s for two contexts whose load was estimated at 30 s each
// (48 stages x 32 microbatches on 16 devices, 7,616 ops). solve() keeps this share of the contexts'
// load estimates back from its time limit for it, so that it returns by the limit.
inline constexpr double kTeardownPerLoad = 1.0 / 16;

struct SolveResult {
  TimedOrder best;
  int64_t bound = 0;       // proven lower bound, units
  bool optimal = false;
  std::string status;      // "optimal", "heuristic meets bound", "budget exhausted", "time limit", ...
  double seconds = 0;
  int checks = 0;
  uint64_t rlimit_used = 0;
  bool improved = false;   // Z3 found a better order than the incumbent
  int free_pairs = 0;      // size of the encoding
  int memory_constraints = 0;
  bool smt2_written = false;  // options.dump_smt2 was written (not when the encoding is not built)
  // Filled by synthesize() when windows of the order (window.h) ran instead of the whole encoding.
  int windows = 0;             // windows checked
  int improving_windows = 0;   // windows whose order was kept
  int window_dumps = 0;        // window encodings written (<dump_smt2>.w<N>.smt2)
  // Set by synthesize(): seconds after its start by which the Z3 phase had to end (the DAG, the
  // heuristic and the bounds count against the same time limit).
  double deadline_s = 0;
};

// Resource units per second of one context assumed when deriving the rlimit budget from a time
// limit (one context on an otherwise idle core does about 2.3 M per second).
uint64_t rlimit_per_second();

// The Z3 budget of a step: `rlimit` when the caller gave one, else `seconds` (at least 0) at
// rlimit_per_second() for each of `contexts` contexts.
uint64_t rlimit_budget(uint64_t rlimit, double seconds, int contexts = 1);

// Seconds of one context's budget that loading the encoding of `dag` takes (the estimate solve()
// uses to skip encodings too large for its budget; deterministic: sizes only). Infinity when the
// encoding is never built (DeviceReach::affordable is false).
double encoding_load_seconds(const OpDag& dag);

Result<SolveResult> solve(const OpDag& dag, const TimedOrder& incumbent, int64_t lower_bound,
                          const SolveOptions& options);

}  // namespace ps
