// model.h — the inputs: model (layer types and layers), cluster, pipeline settings.
//
// Semantics of a layer's numbers (see docs/inputs.md for the full schema):
//  * An F (forward) of a layer for one microbatch takes forward_ms and allocates activation_mb that
//    stay live until the backward frees them.
//  * An I (backward for inputs) takes backward_input_ms and frees all of activation_mb except
//    wgrad_stash_mb, which the W (backward for weights, backward_weight_ms) frees. A fused B takes
//    backward_ms when the type gives it (a fused backward measured apart), else I + W, and frees
//    everything.
//  * recompute_full / recompute_selective: what an R op costs and what F keeps when the layer's
//    stage recomputes (ir/problem.h RecomputeMode).
//  * output_mb is the tensor that crosses a stage boundary after this layer (the gradient going back has
//    the same size). params_m is millions of parameters; model states cost params_m * bytes_per_param MB.
// Units: ms, MB = 1e6 bytes, GB = 1e9 bytes, GB/s = 1e9 bytes/s.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/mesh.h"
#include "ir/status.h"

namespace ps {

// One way of recomputing a layer's forward in the backward (docs/inputs.md, "Recomputation").
struct RecomputeOption {
  double ms = 0;       // 3.1: time of the recomputation (an R op's share for this layer)
  double kept_mb = 0;  // 33.5: activation F keeps (<= activation_mb); the rest is recomputed
};

struct LayerType {
  char symbol = '?';             // 'M'
  std::string name;              // "mamba"
  double forward_ms = 0;         // 3.73
  double backward_input_ms = 0;  // 5.68
  double backward_weight_ms = 0; // 1.62
  std::optional<double> backward_ms;  // 6.1: B's time (fused backward); none: I + W
  double weight_walk_ms = 0;     // 0.4: a split W's extra time for each layer below this one in its
                                 // stage (PyTorch's stage_backward_weight walks the stage's graph below
                                 // every parameter group); 0: W costs the same in any stage
  double activation_mb = 0;      // 900
  double wgrad_stash_mb = 0;     // 120 (<= activation_mb)
  double output_mb = 0;          // 32
  double params_m = 0;           // 210 (millions of parameters)
  bool split_backward = true;    // false: the backward cannot be split into I and W (use B)
  bool joins_next = false;       // true: with the next layer it forms one model layer (a sublayer,
                                 // e.g. attention before its MLP): Megatron-style partitions and
                                 // layouts never cut after it; pipesmith's search may
  int vocab_shards = 1;          // K > 1: a head type that is one of K vocabulary shards
  std::string kind;              // "attention+mlp": analytic kind named in the file; "" if none
  RecomputeOption recompute_full;       // keep the layer's input, recompute its whole forward
  RecomputeOption recompute_selective;  // keep all but the attention cores' quadratic activations,
                                        // recompute those cores ({0, activation_mb}: nothing to drop)
  SourceLoc loc;                 // where the type is defined

  // B's time, ms: backward_ms when given, else backward_input_ms + backward_weight_ms.
  double fused_backward_ms() const { return backward_ms ? *backward_ms : backward_input_ms + backward_weight_ms; }
  // The least time the layer's backward takes: B, or I + W when it splits and that is cheaper.
  double least_backward_ms() const {
    const double split = backward_input_ms + backward_weight_ms;
    return split_backward && split < fused_backward_ms() ? split : fused_backward_ms();
  }
};

struct Layer {
  int id = 0;               // position in the layer list, 0-based
  char type = '?';          // symbol of its LayerType
  std::vector<int> inputs;  // producers; by default {id-1} (none for layer 0)
  SourceLoc loc;
  std::vector<std::string> modules{};  // framework module names ({"layers.3"}); empty: not named
};

struct Model {
  std::string name;                    // "nemotron-h-like"
  std::map<char, LayerType> types;     // by symbol (ordered: deterministic output)
  std::vector<Layer> layers;           // in topological order
  bool tied_embeddings = false;        // architecture.tied_embeddings: the head's projection is the
                                       // embedding's weight (one tensor held by two layers)
  SourceLoc loc;

  const LayerType& type_of(int layer) const { return types.at(layers.at(layer).type); }
};

// The per-microbatch costs of layers first..last run as one: F, I and W times, activation, stash,
// parameters and both recompute options summed in layer order, W with each layer's weight_walk_ms
// times the layers before it in the range (weight_walk_ms itself summed); backward_ms, when any of the
// layers gives it or walks, the sum of their fused_backward_ms() (B has no walk); split_backward only
// when every layer's backward splits. The other fields (name, output, shards, ...) keep their
// defaults: what a run sends on and what it is called depend on who asks (a stage, a joined layer).
LayerType summed_costs(const Model& m, int first, int last);

// Point-to-point link: transfer time = latency + bytes / bandwidth.
struct LinkModel {
  double bandwidth_gb_per_s = 200;  // GB/s
  double latency_us = 5;            // microseconds
  // Milliseconds to move `mb` megabytes (1 MB / (1 GB/s) = 1 ms).
  double transfer_ms(double mb) const {
    return latency_us / 1000.0 + (bandwidth_gb_per_s > 0 ? mb / bandwidth_gb_per_s : 0.0);
  }
};

// The rule every reader holds a link's numbers to, cluster files and schedule files alike: a finite
// bandwidth_gb_per_s > 0 and a finite latency_us >= 0. For field `key` ("bandwidth_gb_per_s" or
// "latency_us") holding `value`: what is wrong ("must be > 0, got 0"), or "" when it keeps the rule.
std::string link_field_error(std::string_view key, double value);

struct Cluster {
  std::string name;            // "8xH100-80GB"
  int devices = 0;             // 8
  double memory_gb = 0;        // 80 per device; 0 = unlimited
  LinkModel link;              // within a node
  int devices_per_node = 0;    // 0 = all devices in one node
  LinkModel inter_node_link;   // between nodes (used when devices_per_node > 0)
  double op_overhead_ms = 0;   // 0.4: the runtime's own time per compute op, added to each one
  long long gpus = 0;          // 2048: GPUs of the mesh (ir/mesh.h); 0 = not given
  int gpus_per_node = 0;       // 8: GPUs per node under a mesh; 0 = not given
  SourceLoc gpus_loc;          // where `gpus:` is
  SourceLoc loc;

  // Link between two devices.
  const LinkModel& link_between(int a, int b) const {
    if (devices_per_node > 0 && a / devices_per_node != b / devices_per_node) return inter_node_link;
    return link;
  }
};

struct PipelineConfig {
  int microbatches = 0;        // 16
  double bytes_per_param = 18; // weights + grads + fp32 master + Adam
  SourceLoc loc;
};

// Everything read from the input YAML files.
struct Spec {
  Model model;
  Cluster cluster;
  PipelineConfig pipeline;
  // The mesh the pipeline runs in (ir/mesh.h), when one is given: then every number of `model` is one
  // GPU's, and mesh_types holds each layer type's per-GPU split (by symbol).
  std::optional<Mesh> mesh;
  std::map<char, MeshLayerCosts> mesh_types;
};

// Command-line overrides applied after reading the files (unset = keep the file's value).
struct SpecOverrides {
  std::optional<int> devices;
  std::optional<int> microbatches;
  std::optional<double> memory_gb;
  ParallelInput parallel{};  // the mesh's fields (gpus included), over the files' `parallel:` sections
};

// Reads a model file (which may also hold `cluster:` and `pipeline:`) and an optional separate
// cluster file, applies overrides and validates everything. Errors carry file:line:col.
Result<Spec> load_spec(const std::string& model_path, const std::string& cluster_path = "",
                       const SpecOverrides& overrides = {});
// Same, from YAML text (file name used only for messages).
Result<Spec> parse_spec(const std::string& yaml_text, const std::string& file_name);
Result<Cluster> load_cluster(const std::string& path);

// Validates cross-field invariants (devices > 0, costs >= 0, stash <= activation, ...).
Status validate(const Spec& spec);

// The plans pipesmith synthesizes give every device at least one stage, so they need at least as many
// layers as devices: the plan search, `pipesmith bound` and pipesmith.bound refuse a model with fewer,
// in these words (the bounds themselves, synth/bounds, hold for plans that leave devices idle too).
Status check_layers_for_devices(const Spec& spec);

}  // namespace ps
