// mesh_plan.h — choosing the mesh with the schedule (`pipesmith plan`): the meshes a model can run on
// a number of GPUs, refused or pruned by memory, the most promising synthesized and ranked.
//
// Guarantees:
//  * Every candidate goes through the one reader of the mesh (ir/mesh.h, via load_spec), so a mesh
//    the command line would refuse is never planned.
//  * Candidates are enumerated in a fixed order and synthesized with an evaluation budget: the same
//    inputs give the same rows on any machine.
//  * A candidate is pruned (and says why) when its model states cannot fit even split evenly over
//    the pipeline's devices, or one layer's model states and activation exceed a GPU.
//
// The space (docs/mesh.md, "Choosing the mesh"): pipeline P a divisor of the GPUs up to the layers;
// tensor T a power of two within a node (at most 8 without gpus_per_node); context 1; expert E a
// power of two dividing the routed experts and D·T (1 for a dense model); data D the rest; the
// optimizer distributed and sequence parallelism on with T > 1 unless pinned; each dimension can be
// pinned.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/mesh.h"
#include "ir/model.h"
#include "ir/status.h"
#include "synth/synthesize_model.h"

namespace ps {

struct MeshPlanOptions {
  ParallelInput pinned;          // gpus and global_batch required; any other field pins that dimension
  std::optional<int> pipeline;   // pins the pipeline's devices P
  std::optional<double> memory_gb;  // overrides the cluster's memory per GPU
  int top = 4;                   // meshes synthesized: the best by the estimate
  int evaluations = 20;          // the search budget of each synthesis (candidates)
  double time_limit_s = 5;       // each synthesis' Z3 share (its rlimit derives from it: deterministic)
  unsigned seed = 0;
};

struct MeshPlanRow {
  int pipeline = 0, tensor = 1, context = 1, expert = 1, data = 1, microbatches = 0;
  bool sequence_parallel = false;
  OptimizerSharding optimizer = OptimizerSharding::kDistributed;
  double estimate_ms = 0;     // (M + P - 1) x the per-GPU F+I+W of one microbatch / P: ranks before synthesis
  bool synthesized = false;
  int stages = 0;             // of the synthesized plan
  double iteration_ms = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0, peak_memory_gb = 0, bubble = 0;
  std::string note;           // why pruned, refused or not synthesized
};

struct MeshPlan {
  std::vector<MeshPlanRow> rows;  // synthesized rows by iteration, then the others by estimate
  int enumerated = 0, refused = 0, pruned = 0;
  std::optional<ModelSynthesis> best;  // the fastest synthesized mesh's certified schedule
  std::optional<Spec> best_spec;
};

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
