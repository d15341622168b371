// megatron_layout.h — Megatron-LM's `--pipeline-model-parallel-layout` strings.
//
// Syntax (as Megatron-LM documents and parses it, megatron/core/transformer/
// pipeline_parallel_layer_layout.py):
//   * `|` separates stages; stages are listed in forward order, virtual chunk 0 of every pipeline
//     rank first, then chunk 1, ...: layout stage i runs on rank i mod P (virtual chunk i / P), so
//     the number of stages must be a multiple of the pipeline size P.
//   * symbols: `E` embedding, `t` transformer decoder layer, `m` MTP layer, `L` loss (LM head).
//   * `x*N` repeats the single character before it (a symbol or `|`) N times;
//     `(...)*N` repeats a group (groups do not nest); `,` is cosmetic and ignored.
//   * empty stages are legal in Megatron ("E||t|L"); pipesmith stages need at least one layer, so
//     they are rejected here with a message naming the stage.
// Example: "Et*3|(tt|)*29,m|L" = 32 stages: Ettt, then 29 × tt, then m, then L (P=16, V=2).
//
// Mapping onto a pipesmith model: layouts name layer *kinds*, our models name layer types. Layers
// are matched in order: a model layer of symbol 'E' (or type kind/name "embedding") must meet an
// `E`, one of symbol 'L' (or kind/name "head", "loss", "lm_head") an `L`, one of symbol 'm' (or
// kind/name "mtp") an `m`, and every other layer a `t`; layers joined by `joins_next` (sublayers)
// and the shards of a vocabulary-sharded head (a run of one head type, e.g. `LLLL`) count as one
// layer of the group's kind (see megatron_layers). Any mismatch — counts or order — is an
// error that names the first disagreeing position, its stage and what each side has there.
#pragma once

#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps {

struct MegatronLayout {
  std::string text;                 // as given
  std::vector<std::string> stages;  // expanded, e.g. {"Ettt", "tt", ..., "m", "L"}
};

// Parses and expands a layout string. Errors name the 1-based column.
Result<MegatronLayout> parse_megatron_layout(const std::string& text);

// True when `text` can only be meant as a layout (contains '|' or only layout characters), so a
// command can tell "balanced" from "Ett|ttL".
bool looks_like_megatron_layout(const std::string& text);

// Megatron kind of one model layer: 'E', 't', 'm' or 'L' (see the mapping above; a layer of kind
// "mtp_projection" is an 'm' too).
char megatron_kind(const Model& model, int layer);

// Megatron's layers over the model's: a run of layers joined by `joins_next` (sublayers, e.g. an
// attention layer and its MLP) is ONE Megatron layer, and so is a run of consecutive layers of one
// head type (the shards of a vocabulary-sharded head: Megatron has one loss layer, so its partitions
// and layouts keep the shards together, where an unsharded head would be); every other layer is one
// by itself. Its kind is 'm' if any part is an MTP part, else 'E' if any is the embedding, else 'L'
// if any is a head, else 't'. Megatron's even partitions and layouts only cut between these.
struct MegatronLayers {
  std::vector<int> first;  // first model layer of each Megatron layer, increasing, first[0] = 0
  std::string kinds;       // one kind per Megatron layer
  int size() const { return static_cast<int>(first.size()); }
  // One past the last model layer of Megatron layer u.
  int end(int u, int num_layers) const { return u + 1 < size() ? first[u + 1] : num_layers; }
};
MegatronLayers megatron_layers(const Model& model);

struct LayoutPlan {
  Partition partition;         // one range per layout stage
  std::vector<int> placement;  // stage i on device i mod P
  int stages_per_device = 1;   // V = stages / P
};

// Matches the layout against `model` and cuts it into stages placed on `devices` ranks.
Result<LayoutPlan> apply_megatron_layout(const MegatronLayout& layout, const Model& model,
                                         int devices);

}  // namespace ps
