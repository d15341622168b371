// synthesize.h — the synthesizer for a fixed partition and placement, as one straight script:
//
//   build the op DAG → lower bound → heuristic (and the baselines) → encode → solve (anytime)
//   → decode → insert comms → verify with the checker → certificate.
//
// Guarantees:
//  * A returned schedule passed the checker (rendezvous semantics, comms inserted by the shared
//    rule, memory within the limit); a rejection is an internal error (kRuntime), never a result.
//  * It is never slower, in the checker's simulation, than the heuristic's order or any baseline
//    whose shape fits the problem (the best of them seeds Z3 when it beats the heuristic).
//  * certificate.extra["optimal"] is "true" only when the order is proven optimal on the op DAG
//    (Z3 UNSAT below it, or it meets the DAG lower bound) AND the checker's makespan equals that
//    proven bound; "bound_proven_ms" records the proven bound either way. The op DAG runs I and W on
//    a stage that splits: where such a stage's B is cheaper than its I + W (a fused backward_ms, a
//    per-op overhead), schedules running B can beat the DAG, so its bounds are dropped (the
//    checker's own bound stays) and the order is never called optimal.
//  * Infeasible memory limits return kInfeasible with infeasible.h's explanation.
//  * Deterministic for a fixed seed and rlimit budget (see solve.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "synth/z3/solve.h"
#include "verify/verify.h"

namespace ps {

// What synthesize() reports as it goes: one value per step that moves the incumbent or the bound.
// Times in ms of the op DAG's timing, durations in s; a caller formats them (the command prints lines).
struct HeuristicProgress {    // the list scheduler's portfolio and the baselines gave the first order
  enum class Portfolio { kFull, kLean, kOne };  // the portfolio the budget allowed
  double makespan_ms = 0;     // the heuristic's order
  std::string policy;         // "bwd-first/fill/inflight=mem/oldest"
  int policies = 0;           // policies tried
  Portfolio portfolio = Portfolio::kFull;
  double heuristic_s = 0;
  std::optional<double> best_baseline_ms;  // unset: no baseline fits
  double baselines_s = 0;     // the baselines (and the seed order) after the heuristic
  int64_t ops = 0;            // ops of the op DAG
};
struct BoundProgress {        // the DAG bound search (synth/bounds/dag_bounds.h)
  double bound_ms = 0;
  std::string reason;         // what proves it ("destructive bound: ...")
  int trials = 0;
  int64_t nodes = 0;          // search nodes
  uint64_t work = 0;          // elementary steps
  bool work_capped = false;   // a work cap stopped a trial (the bound stands)
  double incumbent_ms = 0;
  double elapsed_s = 0;
};
struct SmtBoundProgress {     // Z3 on one-resource relaxations (synth/bounds/smt_bound.h)
  std::optional<std::string> failure;  // set: Z3 failed on them (the bound stays), why; no figures
  double bound_ms = 0;
  bool raised = false;
  std::string reason;         // raised: what proves it ("z3 relaxation: device 0 alone ...")
  int relaxations = 0, skipped = 0, checks = 0, trials = 0;
  uint64_t rlimit_used = 0;
  double incumbent_ms = 0;
  double elapsed_s = 0;
};
struct SolveStepProgress {    // Z3 on the order: an incumbent or a bound changed
  std::string model;          // the encoding ("z3" for windows of the order)
  std::string phase;          // SolveProgress::phase
  double incumbent_ms = 0;
  double bound_ms = 0;
  double elapsed_s = 0;       // since synthesize() started
};
struct ExactMemoryProgress {  // the proof under the exact memory numbers
  double incumbent_ms = 0;
  double bound_ms = 0;
  int checks = 0;
};
using SynthProgress =
    std::variant<HeuristicProgress, BoundProgress, SmtBoundProgress, SolveStepProgress, ExactMemoryProgress>;

struct SynthOptions {
  double time_limit_s = 10;  // wall-clock cap of the call (heuristic, bounds, Z3; what follows Z3 is reserved)
  uint64_t rlimit = 0;       // Z3 budget; 0 = time_limit_s × rlimit_per_second() × contexts
  unsigned seed = 0;
  int contexts = 2;          // Z3 portfolio size (threads)
  bool z3_warm_start = false; // Z3 starts from the incumbent (initial values; Z3 >= 4.13.1; z3/encode.h)
  bool use_baselines = true; // seed with the best fitting baseline when it beats the heuristic
  std::string dump_smt2;     // write the encoding here (with windows: <dump_smt2>.w<N>.smt2 per window)
  // Optional: an order of this problem found elsewhere (the plan search's), compute ops only. It
  // seeds Z3 when it beats the heuristic and the baselines on the op DAG.
  std::optional<Schedule> seed_schedule;
  std::function<void(const SynthProgress&)> progress;  // one report per incumbent/bound change
  const std::atomic<bool>* interrupt = nullptr;      // set: Z3 stops (SolveOptions::interrupt)
};

struct SynthResult {
  Schedule schedule;         // checked: comms, predicted times, certificate with extras
  Report report;             // the checker's report on it
  double makespan_ms = 0;    // the checker's simulation
  double bound_ms = 0;       // best lower bound: max(DAG bound, checker bound, Z3-proven bound)
  double gap = 0;            // (makespan - bound) / bound
  bool optimal = false;
  double optimal_up_to_ms = 0;  // > 0: proven optimal on the integer DAG, ms above the bound from rounding
  std::string solver_status;
  double solve_s = 0;        // Z3 phase
  double total_s = 0;
  double heuristic_ms = 0;   // DAG timing of the heuristic's order
  std::string heuristic_policy;
  struct BaselineTime {
    std::string name;            // "zb-h1"
    double makespan_ms = 0;      // checker's simulation (0: does not fit the memory limit)
    std::string note;            // why it does not fit, if so
  };
  std::vector<BaselineTime> baselines;  // every baseline whose shape fits the problem
  double best_baseline_ms = 0;  // best checker makespan among them (0: none fits)
  std::string best_baseline;
  std::string seed_source;   // "heuristic <policy>" or "baseline <name>"
  double dag_bound_ms = 0;
  double z3_bound_ms = 0;    // the bound after Z3 ran (0: Z3 did not run)
  SolveResult solve;
};

// Seconds per op of a plan that the steps after the search and Z3 take (decoding, inserting comms,
// the checker, writing the file): about 1 s at 72,000 ops. The plan search and Z3's windows, which
// run to their caps, leave that much of the time limit.
inline constexpr double kFinishSecondsPerOp = 15e-6;

// Seconds since `t` on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The version of the Z3 library loaded at run time ("5.4.0.0").
std::string z3_version();

// `spec` is optional: it only adds layer names and file locations to infeasibility messages.
Result<SynthResult> synthesize(const Problem& problem, const SynthOptions& options, const Spec* spec = nullptr);

}  // namespace ps
