// synthesize_model.h — `pipesmith synth` as a library call: from a model and cluster (Spec) to a
// certified schedule, searching what the caller leaves open.
//
//   plan (fixed by the options, or searched by the tuner) → synthesize() on the chosen plan (Z3
//   refines the order) → keep the tuner's order if it simulates faster (re-certified) →
//   certificate extras that say how the run was budgeted.
//
// Time: the tuner gets 60 % of `time_limit_s` and Z3 the rest (the whole encoding where it loads,
// else windows of the order: synth/z3/window.h). With `evaluations` the search is bounded
// by candidates (the clock ends neither the search nor an evaluation) and the time limit sizes Z3's
// share alone, so the file is byte-identical on any machine.
//
// Guarantees:
//  * The returned schedule passed the checker (synthesize.h); it is never slower in the checker's
//    simulation than the tuner's own order. Where the tuner's order is written (schedule_method
//    "tuner"), the certificate keeps synthesize()'s solver block: what Z3 did on the plan.
//  * Same Spec, options and seed with `evaluations` set: byte-identical schedule file.
//  * An interrupt (options.interrupt set while it runs) ends the search as its deadline would and
//    skips Z3; the best plan so far is checked and returned. Interrupted before any plan fits the
//    memory: an error of code ErrorCode::kInterrupted.
//  * Without `evaluations`, `time_limit_s` past `start` stops the steps after the search still running
//    (the local search and bounds on the order, Z3) as an interrupt would — Z3 does not start when the
//    search ended past it — and the best schedule so far is checked and returned, its certificate
//    saying where the limit came (`time_limit_reached`). The search keeps to its own share (its seeds
//    go on until some plan fits the memory); what cannot poll a flag (building the op DAG, the
//    checker) runs past the limit.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"
#include "synth/plan/plan_spec.h"
#include "synth/synthesize.h"
#include "synth/tuner/tuner.h"

namespace ps {

struct ModelSynthOptions {
  // What is fixed (unset: searched); plan_spec.h reads words into these (parse_partition_choice,
  // parse_placement_choice). A fixed partition method cuts stages_per_device x P stages (P when 0).
  std::optional<PartitionChoice> partition;
  std::optional<PlacementChoice> placement;
  int stages_per_device = 0;  // 0: 1 for sequential, 2 for interleaved and vshape; else >= 1
  bool whole_layers = false;  // cut only between whole model layers (no joins_next group split)
  // Activation recomputation (tuner.h RecomputeChoice). kSearch with both partition and placement
  // fixed: the plan as given, or, when it does not fit the memory, with every stage selective,
  // then full (the first that fits).
  RecomputeChoice recompute = RecomputeChoice::kSearch;
  // Budgets.
  double time_limit_s = 10;  // the whole run, counted from `start`
  int evaluations = 0;       // > 0: the search's budget in candidates instead of the clock
  uint64_t rlimit = 0;       // Z3's budget; 0: its share of the time limit × rlimit_per_second × threads
  unsigned seed = 0;
  int z3_threads = 2;        // Z3 contexts (portfolio)
  int search_threads = 0;    // candidate evaluations in parallel; 0: hardware threads, at most 16
  // When the time limit started counting (a caller that read inputs first passes its own start);
  // unset: when synthesize_model is called.
  std::optional<std::chrono::steady_clock::time_point> start;
  const std::atomic<bool>* interrupt = nullptr;
  std::string dump_smt2;     // write Z3's encoding here
  // Reporting (all optional).
  std::function<void(const TuneProgress&)> search_progress;
  std::function<void(const SynthProgress&)> solver_progress;  // synthesize()'s reports
};

// Sets o.partition, o.placement and o.stages_per_device from the words a front end was given, by
// read_plan_given's rules (synth/plan/plan_spec.h).
Status set_plan_words(ModelSynthOptions& o, const Spec& spec, const PlanGiven& given,
                      std::string_view stages_name = "stages_per_device");

// Where the time limit stopped a run that had not finished within it.
enum class TimeLimitReached { kNo, kInSearch, kInRefinement };

struct ModelSynthesis {
  Problem problem;                  // the chosen plan's problem
  std::vector<int> placement;       // stage → device of the chosen plan
  std::string plan_desc;            // "searched (…)", "balanced", "Megatron layout \"…\""
  std::optional<TuneResult> tuned;  // the search, when something was searched
  // Per stage: 1 where the stage's layers could split their backward but the plan runs B instead
  // (the search found it cheaper: a measured backward_ms below I + W, or op_overhead_ms).
  std::vector<char> fused_by_choice;
  SynthResult result;               // the certified schedule and its figures
  bool z3_skipped = false;          // interrupted (or out of time) before Z3: it did not run
  TimeLimitReached time_limit_reached = TimeLimitReached::kNo;  // where time_limit_s stopped the run
};

// The certificate's `time_limit_reached` words for `where` ("" for kNo).
const char* time_limit_reached_note(TimeLimitReached where);


// Candidate evaluations run in parallel: the default thread count (hardware threads, 1..16).
int default_search_threads();

Result<ModelSynthesis> synthesize_model(const Spec& spec, const ModelSynthOptions& options);

}  // namespace ps
