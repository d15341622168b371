// mesh.h — the pipeline inside a mesh: tensor, context, expert and data parallelism next to the
// pipeline's devices, and what they do to one GPU's costs and memory.
//
// Semantics (docs/mesh.md has every formula and its source):
//  * A mesh of G GPUs is pipeline (the cluster's `devices`, P) × data (D) × context (C) × tensor (T)
//    GPUs. Expert layers regroup the same GPUs of a stage as expert-data × expert (E) × expert-tensor
//    (ET): E × ET divides D × C × T, and expert-data = D·C·T / (E·ET). Ranks are laid on nodes in
//    Megatron-LM's and torchtitan's default order: tensor innermost, then context, data, with pipeline
//    outermost (rank = t + T·(c + C·(d + D·p))); the expert grid puts expert-tensor innermost, then
//    expert. A group whose members share a node talks over the cluster's `link` (NVLink); one that
//    spans nodes over `inter_node_link`.
//  * With a mesh, every number of the lowered model (ir/model.h LayerType) is one GPU's: an F, I or
//    W takes the layer's compute divided over T × C plus the exposed time of its collectives; its
//    activation is what one GPU keeps; output_mb is what one GPU sends to its peer in the next stage.
//    params_m is the layer's model-state memory on one GPU divided by pipeline.bytes_per_param (the
//    parameters an unsharded, replicated GPU would hold in the same memory), so that every consumer
//    of params_m · bytes_per_param (the problem, the checker, the search) sees one GPU's memory.
//  * Without a mesh (no `parallel:` section, no `gpus:` on the cluster, no mesh override) nothing
//    here runs and every number is as the files give it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/cost_model.h"
#include "ir/status.h"

namespace YAML {
class Node;
}

namespace ps {

struct LinkModel;
struct Cluster;

// How the optimizer states (and, with FSDP, the weights and gradients) are spread over data parallelism.
enum class OptimizerSharding {
  kReplicated,   // every data-parallel rank holds all of them
  kDistributed,  // Megatron's distributed optimizer (ZeRO-1): optimizer states divided over data parallelism
  kFsdp,         // FSDP (ZeRO-3): weights, gradients and optimizer states divided, the stage's unsharded
                 // weights and gradients held while it computes
};
const char* optimizer_name(OptimizerSharding o);  // "replicated", "distributed", "fsdp"
std::optional<OptimizerSharding> parse_optimizer(std::string_view word);

// How context parallelism moves K and V between the GPUs of a context group (Megatron-LM's and
// TransformerEngine's `cp_comm_type`; docs/mesh.md, "Context parallelism").
enum class CpComm {
  kP2p,        // the K/V ring: CP-1 point-to-point steps, each overlapping a step of the attention core
  kAllGather,  // K and V all-gathered before the attention core (its gradients reduce-scattered after), exposed
};
const char* cp_comm_name(CpComm c);  // "p2p", "all_gather"
std::optional<CpComm> parse_cp_comm(std::string_view word);

inline constexpr long long kMaxGpus = 1'048'576;  // G: GPUs of a mesh

// The mesh, resolved and validated.
struct Mesh {
  int pipeline = 1;        // 16: the pipeline's devices (cluster.devices)
  int tensor = 1;          // 8
  int context = 1;         // 1
  int expert = 1;          // 64
  int expert_tensor = 1;   // 1
  int data = 1;            // 128
  bool sequence_parallel = false;
  OptimizerSharding optimizer = OptimizerSharding::kReplicated;
  CpComm cp_comm = CpComm::kP2p;  // with context > 1
  int micro_batch = 1;          // 1: sequences per microbatch (architecture.micro_batch_size of derived types)
  long long global_batch = 0;   // 2048: sequences per iteration = micro_batch · data · microbatches
  long long gpus = 1;           // 2048 = pipeline · data · context · tensor
  int gpus_per_node = 0;        // 8; 0: all GPUs in one node
  double peak_tflops = 0;       // 989: one GPU's dense peak (hardware.peak_tflops; 0 = not given), for MFU
  long long seq_length = 0;     // 4096: tokens per sequence (architecture.seq_length; 0 = not given)
  double model_flops_per_token = 0;  // 2.3e12: F+I+W model FLOPs of one token (docs/mesh.md, "MFU");
                                     // 0 when a layer type gives its numbers (no kind)
  SourceLoc loc;                // where the mesh was given (the `parallel:` section), if in a file

  int expert_data() const;  // D·C·T / (E·ET)
};

// What a schedule file keeps of the mesh (problem.mesh) to report throughput: gpus 0 = no mesh.
struct MeshThroughput {
  long long gpus = 0;                // 2048
  double tokens_per_iteration = 0;   // 8388608: global batch x sequence length
  double model_flops_per_token = 0;  // 2.3e12; 0 = unknown (no MFU)
  double peak_tflops = 0;            // 989; 0 = unknown (no MFU)
  bool operator==(const MeshThroughput&) const = default;
};
MeshThroughput mesh_throughput_inputs(const Mesh& m);
// The figures at an iteration of `iteration_ms`: tokens/s over all GPUs, model TFLOP/s per GPU and
// MFU (that over peak_tflops); each 0 where its inputs are unknown.
struct Throughput {
  double tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
};
Throughput mesh_throughput(const MeshThroughput& t, double iteration_ms);

// The groups a rank belongs to.
enum class MeshGroup { kTensor, kContext, kExpert, kExpertTensor, kData, kExpertData };
const char* mesh_group_name(MeshGroup g);  // "tensor", ...
// Where the group that holds rank 0 lies: its size, the rank stride between members, the nodes it
// spans and how many of its members share rank 0's node.
struct GroupPlacement {
  int size = 1;
  long long stride = 1;
  int nodes = 1;
  int members_in_first_node = 1;
};
GroupPlacement group_placement(const Mesh& m, MeshGroup g);

// One file's `parallel:` section, or the overrides: each field unset unless given, with where.
struct ParallelInput {
  std::optional<long long> gpus, tensor, context, expert, expert_tensor, data, micro_batch, global_batch;
  std::optional<bool> sequence_parallel;
  std::optional<std::string> optimizer;  // a word parse_optimizer reads
  std::optional<std::string> cp_comm;    // cp_comm_type: a word parse_cp_comm reads
  std::map<std::string, SourceLoc, std::less<>> at;  // field name -> location of its value
  SourceLoc loc;                                      // of the section
  bool any() const;
  // Fields set in `over` replace ours (with their locations).
  ParallelInput merged_with(const ParallelInput& over) const;
};
// Reads a `parallel:` map (node `n`, located in `file`); unknown keys, types and ranges (>= 1) are
// located errors.
Result<ParallelInput> read_parallel(const YAML::Node& n, const std::string& file, const SourceLoc& key_loc);

// The per-GPU numbers of one layer type under the mesh, with the split that `pipesmith lower` shows.
struct MeshLayerCosts {
  DerivedCosts gpu;                  // one GPU's numbers in LayerType units (derive_costs's meaning)
  double compute_ms = 0;             // F+I+W compute (FLOPs and memory-bound kernels)
  double tp_ms = 0, cp_ms = 0, ep_ms = 0;  // F+I+W time of the tensor, context and expert collectives
  double params_per_gpu_m = 0;       // parameters held by one GPU, millions
  double weights_mb = 0, grads_mb = 0, optimizer_mb = 0;  // model state on one GPU
  double model_flops = 0;            // F+I+W model FLOPs of the whole layer for one microbatch (all GPUs;
                                     // a causal attention core over the s^2/2 pairs it computes)
  bool derived = true;               // false: an explicit layer type (no kind); only memory is spread
  double dense_grad_mb = 0;          // one GPU's gradients of dense parameters (reduced over data x context)
  double expert_grad_mb = 0;         // one GPU's gradients of expert parameters (reduced over expert-data)
  double dense_weight_mb = 0;        // one GPU's weights of dense parameters (gathered over data x context)
  double expert_weight_mb = 0;       // one GPU's weights of expert parameters (gathered over expert-data)
  double optimizer_step_ms = 0;      // the optimizer's update of the parameters this GPU owns (0: no kind)
  double unsharded_mb = 0;           // FSDP: the gathered weights and gradients (part of weights_mb and
                                     // grads_mb, held from the stage's UNSHARD to its RESHARD; not in gpu.params_m)
};

// The links a mesh prices collectives on.
struct MeshLinks {
  double intra_gb_per_s = 0, intra_latency_us = 0;  // within a node
  double inter_gb_per_s = 0, inter_latency_us = 0;  // between nodes
};

// Per-GPU costs of one layer type derived from its components (the mesh's transform of
// derive_costs). `bytes_per_param` is pipeline.bytes_per_param (weights 2 + gradients 4 + optimizer
// the rest).
Result<MeshLayerCosts> derive_mesh_costs(const std::vector<Component>& kind, const Architecture& arch,
                                         const Hardware& hw, const Mesh& mesh, const MeshLinks& links,
                                         double bytes_per_param);
// Whether a stage whose layers hold these gradients on one GPU has a data-parallel step: its dense
// gradients reduced over data x context > 1, or its experts' over expert-data > 1 (a dense stage
// under tensor parallelism alone has none, whatever expert-data the unused expert grid gives).
bool has_data_parallel_step(const Mesh& m, double dense_grad_mb, double expert_grad_mb);
// The data-parallel step of a stage whose layers hold these gradients on one GPU, ms: the dense ones
// reduced over data x context, the experts' over expert-data, one after the other, each as a ring
// reduce-scatter (distributed optimizer, FSDP) or all-reduce (replicated) of the whole buffer
// (docs/mesh.md, "The data-parallel step").
double reduce_grad_ms(const Mesh& m, const MeshLinks& links, double dense_grad_mb, double expert_grad_mb);
// A stage's whole data-parallel step, its REDUCE_GRAD's time: the reduction above, the optimizer's
// update of what this GPU owns (`optimizer_step_ms`, summed over the stage's layers), and with the
// distributed optimizer the all-gather of the updated weights over the same groups (FSDP gathers them
// in the next iteration's UNSHARD).
double data_parallel_step_ms(const Mesh& m, const MeshLinks& links, double dense_grad_mb, double expert_grad_mb,
                             double dense_weight_mb, double expert_weight_mb, double optimizer_step_ms);
// FSDP's gather (UNSHARD) of a stage whose layers hold these weights on one GPU when gathered, ms: ring
// all-gathers over the same groups.
double unshard_ms(const Mesh& m, const MeshLinks& links, double dense_weight_mb, double expert_weight_mb);

// Model-state memory of `params_m` million parameters on one GPU, all dense (an explicit layer type:
// only data parallelism spreads it).
MeshLayerCosts explicit_mesh_memory(double params_m, const Mesh& mesh, double bytes_per_param);

// Checks the architecture of one derived layer type against the mesh: heads and KV heads divisible by
// tensor, experts by expert, the sequence by 2 × context. `what` names the layer type in messages.
Status check_mesh_architecture(const std::vector<Component>& kind, const Architecture& arch, const Mesh& mesh,
                               const std::string& what, const SourceLoc& at);

// Resolves the mesh from the files' sections (`given`: model file then cluster file, merged) and the
// overrides, for a pipeline of `pipeline_devices` and a cluster with `cluster_gpus` (0: not given),
// `gpus_per_node` (0: not given). Errors are located at the value they name; an override is named
// "the <field> override".
// `microbatches` is M as known (the file's or the override's; `microbatches_overridden` when the
// latter): a global batch sets M = global_batch / (micro_batch · data), refused when an override
// says otherwise; without one, global_batch = micro_batch · data · M.
struct MeshContext {
  int pipeline_devices = 1;          // cluster.devices
  long long cluster_gpus = 0;        // cluster.gpus (0: not given)
  SourceLoc cluster_gpus_loc;
  int gpus_per_node = 0;             // 0: not given (all GPUs in one node)
  int architecture_micro_batch = 1;  // the model's architecture.micro_batch_size (1 when not given)
  int microbatches = 0;
  bool microbatches_overridden = false;
  bool inter_node_link = false;      // the cluster gives inter_node_link
  SourceLoc cluster_loc;
};
Result<Mesh> resolve_mesh(const ParallelInput& given, const ParallelInput& overrides, const MeshContext& ctx);
// M under the mesh: global_batch / (micro_batch · data).
int mesh_microbatches(const Mesh& m);

}  // namespace ps
