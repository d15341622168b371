// tuner.h — co-optimization of partition (layers → stages), placement (stages → devices) and
// schedule (per-device order) for one model on P devices with M microbatches.
//
// What it does (docs/tuner.md explains the design and the measurements):
//  1. Seeds: balanced-DP partitions at S = P, 2P, 3P, … (up to 8 stages per device, as far as the
//     layers allow) × sequential / looped / V-shape placements, Megatron's even partition, and the
//     published baselines (1F1B, interleaved 1F1B, ZB-H1, ZB-V on even and balanced partitions) with
//     their own orders — so the result is never worse than any of them.
//     Where some stage's fused backward B is cheaper than its I + W (a measured backward_ms, or the
//     cluster's op_overhead_ms), the best seeds again with B on every such stage.
//     At M <= 2P, wave seeds (moves.h): where the best of them is near the best other
//     seed, the search runs twice, from the other seeds (half the time or budget), then from them.
//  2. Bubble-aware local search over a beam of the best candidates, driven by each candidate's
//     timeline (OctoPipe, arXiv 2509.23722): per device, boundary idle (warm-up + cool-down) vs
//     residual idle (internal gaps) and load; if the load imbalance exceeds one layer's cost, move a
//     layer across a stage boundary; else if boundary idle dominates, change the placement
//     (interleave, split a stage onto another device, move or swap stages — irregular placements
//     allowed); else change the scheduling policy. A history (tabu) set keeps every evaluated
//     (partition, placement, policy) so nothing is evaluated twice; the search stops when a round
//     improves nothing for `patience` rounds, or on the evaluation budget, or on the time limit.
//     Each candidate says per stage whether it runs B or I and W (there, moves switch a device's
//     stages or all of them, and partition and placement moves keep the choice by first layer).
//  3. Optionally Z3 (synth/z3/solve.h) on the best few candidates' DAGs.
//  4. The final figures come from the checker: the best candidates are written as schedules
//     (synth/dag/schedule_order.h) and verify()'d (rendezvous semantics, the memory limit); the chosen one is the
//     shortest *simulated* valid schedule.
// Guarantees:
//  * Every candidate respects each device's memory (model states of its stages + live activations
//    and stashes ≤ memory_gb) through the op DAG's cap; the chosen schedule passed verify().
//  * Deterministic for a fixed seed and budget: candidates are evaluated in parallel but reduced by
//    candidate index, ties broken by a stable key; the wall-clock limit only decides how many whole
//    rounds run (hit it, and the result may depend on machine speed — use max_evaluations then).
//  * lower_bound_ms is valid for every partition, placement and order: the larger of
//    synth/bounds/global_bound.h and the layer-packing bound of synth/bounds/packing_bound.h.
//  * kInfeasible when no candidate fits the memory; kBadInput for a bad fixed partition/placement.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/recompute.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "synth/dag/op_dag.h"

namespace ps {


struct TuneProgress {
  int evaluated = 0;            // candidates evaluated so far
  int feasible = 0;             // of which fit the memory
  bool has_best = false;        // some candidate fits the memory (best_ms and gap are set)
  double best_ms = 0;           // best makespan so far (op-DAG timing of the heuristic order)
  double lower_bound_ms = 0;    // over all plans: max(synth/bounds/global_bound.h, synth/bounds/packing_bound.h)
  double gap = 0;               // best / bound − 1
  double elapsed_s = 0;
  std::string phase;            // "seeds", "search", "recompute seeds", "z3", "verify"
  std::string best_desc;        // "S=16 looped balanced [heuristic bwd-first/fill/...]"
};

struct TuneOptions {
  int devices = 0;                     // 0: spec.cluster.devices
  int microbatches = 0;                // 0: spec.pipeline.microbatches
  std::optional<double> memory_gb;     // per device; unset: spec.cluster.memory_gb; 0 = unlimited
  double time_limit_s = 60;            // wall clock for everything (search, Z3, verify)
  // Seconds per op of the best plan's DAG kept back from the search for what follows it (the
  // checker here, and a caller's own steps: pipesmith synth sets it). 0: none. On plans of 10^5+
  // ops (M in the thousands) those steps take seconds, and the search ends early to leave them.
  double finish_s_per_op = 0;
  uint64_t seed = 0;                   // random kicks of the local search
  int threads = 2;                     // parallel candidate evaluations
  int max_stages_per_device = 8;       // k: S ≤ k·P
  int max_evaluations = 0;             // 0: no budget (convergence or time limit stop the search)
  int beam_width = 4;                  // candidates expanded per round
  int patience = 3;                    // rounds without improvement before stopping
  int kicks_per_round = 2;             // random perturbations per beam member and round
  bool widen_on_convergence = true;    // converged within 80 % of the search time: double the beam
                                       // (up to 8x) and the kicks (up to 64) and go on
  bool lean_search = true;             // at M >= 4P the search re-scores screened plans with the lean
                                       // portfolio (evaluate.h), else with the whole one; the best
                                       // candidates get the whole one before the checker
  bool full_portfolio_by_floor = true; // each round, the search portfolio also for the screened plan
                                       // with the lowest plan floor, if 0.5 % below the best's floor
  bool include_baselines = true;       // published schedules as seeds
  int verify_top = 4;                  // candidates (besides baselines) checked by verify() at the end
  int z3_candidates = 0;               // best candidates refined with Z3 (0: none)
  double z3_time_fraction = 0.3;       // at most this share of the time limit goes to Z3
  std::optional<Partition> partition;          // fixed partition (S = its size)
  std::optional<std::vector<int>> placement;   // fixed stage → device map (S = its size)
  RecomputeChoice recompute = RecomputeChoice::kSearch;
  std::function<void(const TuneProgress&)> progress;  // after the seeds and after every round
  // Set (by a signal handler, say) to end the search as the deadline would, at once: no evaluation
  // starts, one under way stops at its next policy once a plan fits, the polish is skipped, and the
  // best plan so far is checked and returned (stop reason "interrupted"). Null: never.
  const std::atomic<bool>* interrupt = nullptr;
};

// Why the search stopped. search_stop_name gives the words the certificate (extra.search) and the
// summaries print. Where several searches run (from the wave seeds, with recomputation), the one
// that says most: interrupted, then time limit, evaluation budget, reached bound, converged.
enum class SearchStop {
  kConverged,         // no improvement for `patience` rounds with every beam member expanded
  kReachedBound,      // the best is within 0.01 % of the lower bound
  kTimeLimit,         // the search's share of time_limit_s ran out
  kEvaluationBudget,  // max_evaluations candidates were evaluated
  kInterrupted,       // the caller's interrupt flag was set
  kFixed,             // partition and placement both fixed: nothing to search
};
// "converged", "reached the lower bound", "time limit", "evaluation budget", "interrupted", "fixed".
const char* search_stop_name(SearchStop s);
// Of two searches' stops, the one reported: the earlier in the order above (the clock's makes the
// plan depend on the machine's speed, so it outranks a budget, a bound or convergence).
SearchStop binding_stop(SearchStop a, SearchStop b);

struct TuneStats {
  int evaluated = 0;          // candidates timed by the heuristic (or a baseline order)
  int feasible = 0;
  int infeasible = 0;         // did not fit the memory
  int rounds = 0;             // local-search rounds
  int improvements = 0;       // rounds that improved the best
  int duplicates = 0;         // moves skipped because the history already had them
  int lean_evaluations = 0;   // candidates ordered by the lean portfolio (policy set 1)
  int whole_evaluations = 0;  // ... by the whole one (policy set 2)
  int floor_portfolios = 0;   // lean- or whole-portfolio evaluations asked for by a low plan floor
  int paced_seeds = 0;        // paced-front seeds evaluated (several nodes only; moves.h)
  bool paced_admitted = false;  // ... and kept as starts: their best beat every other seed
  int wave_seeds = 0;         // wave seeds evaluated (M <= 2P; moves.h)
  bool wave_admitted = false;  // ... and given a search of their own (their best was near the other seeds')
  int pruned = 0;             // moves skipped because their plan floor could not beat the beam
  int widenings = 0;          // times the beam was widened after an early convergence
  int verified = 0;           // candidates checked by verify()
  int z3_runs = 0;
  double search_s = 0;        // seeds + local search
  double z3_s = 0;
  double verify_s = 0;
  double total_s = 0;
  double ms_per_eval = 0;     // mean wall time of one candidate evaluation (one thread)
  SearchStop stop_reason = SearchStop::kConverged;
  int moves_partition = 0;    // evaluated moves by kind
  int moves_placement = 0;
  int moves_schedule = 0;
  int moves_kick = 0;
  int moves_recompute = 0;    // candidates that raise or lower stages' recompute modes (seeds included)
  int moves_backward = 0;     // candidates that run B instead of I and W on stages, or back (seeds included)
};

struct TuneResult {
  Problem problem;                // make_problem(spec, partition, placement) with the chosen
                                  // recompute modes (StageSpec::recompute), split_backward = false
                                  // on the stages that run B by choice, memory set
  Partition partition;
  std::vector<int> placement;     // stage → device
  TimedOrder order;               // on build_op_dag(problem) (default options)
  bool order_on_full_dag = true;  // false: the order breaks a symmetry/memory edge (a baseline's)
  Schedule schedule;              // `order` as written by synth/dag/schedule_order.h (with its SEND/RECV ops when
                                  // the DAG has transfer ops); verify() accepted it
  std::string origin;             // "seed", "baseline zb-h1 (even)", "move: shift layer 12 ...", "z3"
  std::string policy;             // list-scheduling policy, baseline name or "z3"
  std::string description;        // one line: S, placement kind, partition, origin
  double dag_makespan_ms = 0;     // the op-DAG timing of `order`
  double simulated_ms = 0;        // verify()'s simulation of the comm-inserted schedule
  double bubble_ratio = 0;        // from that simulation
  double lower_bound_ms = 0;      // over all partitions and placements: max(global, layer packing)
  double global_bound_ms = 0;     // synth/bounds/global_bound.h alone
  double problem_bound_ms = 0;    // lower bound for the chosen partition and placement
  bool z3_used = false;           // Z3 refined the chosen schedule
  bool z3_optimal = false;        // Z3 proved the order optimal for this partition and placement
  TuneStats stats;
};

// Searches partition, placement and schedule. See the file comment.
Result<TuneResult> cooptimize(const Spec& spec, const TuneOptions& options);

}  // namespace ps
