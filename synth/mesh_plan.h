// mesh_plan.h — choosing the mesh with the schedule (`pipesmith plan`): the meshes a model can run on
// a number of GPUs, refused or pruned by memory, the most promising synthesized and ranked.
//
// Guarantees:
//  * Every mesh goes through the one reader of the mesh (ir/mesh.h, via load_spec), so a mesh the
//    command line would refuse is never planned.
//  * Meshes are enumerated in a fixed order and synthesized with an evaluation budget: the same
//    inputs give the same rows on any machine (bound pruning included: it compares figures, never
//    the clock).
//  * A candidate mesh the caller gives (MeshPlanOptions::candidates) is always synthesized with the
//    same options as the enumerated ones and ranked with them, so the pick is never slower than a
//    candidate that got a schedule.
//  * A mesh is pruned (and says why) when its model states cannot fit even split evenly over the
//    pipeline's devices, or one layer's model states and activation exceed a GPU; when the
//    distributed optimizer on the same mesh has the same per-GPU layer times and no more memory
//    (its data-parallel step, a reduce-scatter, is never the longer); or, before its
//    synthesis, when its lower bound (synth/bounds/model_bound.h: no schedule of any partition and
//    placement is shorter) is no better than the best certified iteration so far.
//
// The space (docs/mesh.md, "Choosing the mesh"): pipeline P a divisor of the GPUs up to the layers
// (and 64); tensor T a power of two within a node (at most 8 without gpus_per_node); context C a
// power of two that leaves chunks of at least kMinContextChunk tokens of a sequence; expert E a
// power of two dividing the routed experts and D·C·T (1 for a dense model); expert-tensor ET 1 or T;
// micro-batch b of 1, 2 or 4 sequences; the optimizer replicated, distributed or fsdp; data D the
// rest; sequence parallelism on with T > 1. Recomputation is searched inside each synthesis. Each
// dimension can be pinned.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/mesh.h"
#include "ir/model.h"
#include "ir/status.h"
#include "synth/synthesize_model.h"

namespace ps {

// A context-parallel chunk of a sequence holds at least this many tokens (the search's rule; pin
// context to go below it).
inline constexpr long long kMinContextChunk = 4096;

// A mesh given by the caller: always synthesized and ranked with the enumerated ones. Unset fields:
// tensor, context, expert, expert_tensor 1; data the rest; the optimizer distributed; sequence
// parallelism with T > 1; micro_batch the model's. gpus and global_batch are the plan's.
struct MeshCandidate {
  int pipeline = 0;  // 16: required
  ParallelInput mesh;
};

struct MeshPlanRow;
// One report per synthesis, before it starts (done false) and when it ends (done true).
struct MeshPlanProgress {
  int index = 0, planned = 0;  // 3 of 7: the synthesis' number, and the most that will run
  const MeshPlanRow* row = nullptr;  // the mesh being synthesized (its figures once done)
  bool done = false;
  double best_ms = 0;          // the best certified iteration so far; 0: none yet
  std::string best_mesh;       // mesh_description of that row
  int pruned_by_bound = 0;     // meshes skipped so far because their bound is no better
};

struct MeshPlanOptions {
  ParallelInput pinned;          // gpus and global_batch required; any other field pins that dimension
  std::optional<int> pipeline;   // pins the pipeline's devices P
  std::vector<MeshCandidate> candidates;  // meshes always synthesized (the published mesh, say)
  std::optional<double> memory_gb;  // overrides the cluster's memory per GPU
  int top = 4;                   // enumerated meshes to get a schedule, by the estimate (2 x top tries once one has)
  int evaluations = 20;          // the search budget of each synthesis (candidates)
  double time_limit_s = 5;       // each synthesis' Z3 share (its rlimit derives from it: deterministic)
  unsigned seed = 0;
  std::function<void(const MeshPlanProgress&)> progress;  // optional
};

struct MeshPlanRow {
  int pipeline = 0, tensor = 1, context = 1, expert = 1, expert_tensor = 1, data = 1, micro_batch = 1,
      microbatches = 0;
  bool sequence_parallel = false;
  OptimizerSharding optimizer = OptimizerSharding::kDistributed;
  CpComm cp_comm = CpComm::kP2p;
  bool candidate = false;     // a mesh the caller gave (MeshPlanOptions::candidates)
  // The larger of bound_ms and (M + P - 1) x (the per-GPU F+I+W of one microbatch + the
  // recomputation its memory forces) / P: ranks the meshes before synthesis (docs/mesh.md,
  // "Choosing the mesh").
  double estimate_ms = 0;
  double bound_ms = 0;        // model_bound's lower bound on any schedule of the mesh (0: not computed)
  bool synthesized = false;
  int stages = 0;             // of the synthesized plan
  double iteration_ms = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0, peak_memory_gb = 0, bubble = 0;
  std::string note;           // why pruned, refused or not synthesized
};

struct MeshPlan {
  std::vector<MeshPlanRow> rows;  // synthesized rows by iteration, then the others by estimate
  int enumerated = 0, refused = 0, pruned = 0;  // pruned: by memory or by another optimizer's dominance
  int pruned_by_bound = 0;  // not synthesized: their lower bound is no better than the best iteration
  int synthesized = 0, attempted = 0;
  std::optional<ModelSynthesis> best;  // the fastest synthesized mesh's certified schedule
  std::optional<Spec> best_spec;
};

// "PP 4 x DP 16 x CP 1 x TP 1, EP 8" (ET and b when not 1): how the table and the progress name a mesh.
std::string mesh_description(const MeshPlanRow& row);

// The framework settings of a planned mesh (`plan -o` writes them beside the schedule).
// Megatron-LM: the mesh's arguments and a --pipeline-model-parallel-layout of the plan's partition, when
// Megatron can run its placement (sequential, or looped: interleaved); otherwise "" and `why` says why.
// Megatron runs its own 1F1B order on it, not the certified one.
std::string megatron_arguments(const MeshPlanRow& row, const Spec& spec, const Problem& problem, std::string& why);
// torchtitan: a TOML fragment with the parallelism degrees and the batch; the schedule CSV and the
// module names per stage come from `pipesmith export` of the schedule (pipesmith.torch.titan).
std::string torchtitan_fragment(const MeshPlanRow& row, const Spec& spec);

// Plans the meshes of `model_path` (with `cluster_path`, which may be empty) on options.pinned.gpus
// GPUs. Errors: gpus or global_batch missing, or no mesh fits (infeasible).
Result<MeshPlan> plan_meshes(const std::string& model_path, const std::string& cluster_path,
                             const MeshPlanOptions& options);

}  // namespace ps
