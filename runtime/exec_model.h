// exec_model.h — the executable model: a small real network built from a Problem (and its Model when
// the stages know their layers), whose per-stage sizes reflect the layer costs.
//
// Mapping (docs/runtime.md has the full text and the reasons):
//  * Every stage is a chain of blocks. With layer information (a Model and stage layer ranges) each
//    layer is one block: a layer type named like "embedding" (or whose analytic kind starts with
//    embedding) → Embedding (token ids → vectors), named like "head"/"loss" (or whose kind ends with
//    head) → Head (projection + softmax cross-entropy), anything else → an MLP residual block
//    y = x + W2·gelu(W1·x). An embedding that is not the first layer, or a head that is not the last,
//    runs as an MLP block (a note says so). Without layer information each stage is one MLP block.
//  * Vocabulary-parallel head: a run of K ≥ 2 consecutive layers of one head type that ends the model
//    is one head split into K shards (shard i holds classes [offset_i, offset_i + classes_i) of the
//    global vocabulary, each shard's classes computed as a head's are). The shards run as a chain:
//    each passes (x, L, t) on — the activation unchanged, the per-row running log-sum-exp of the
//    logits so far and the running target logit — and the last one's output is the loss mean(L − t).
//    A boundary inside the chain carries 2·tokens more elements (boundary_count); runtime/
//    stage_compute.cpp has the math and its gradient. A single head runs exactly as before.
//    Stage 0 always starts with an Embedding and the last stage always ends with a Head (added when
//    the layers do not provide them).
//  * MLP hidden width = hidden·scale × (forward_ms of the type / forward_ms of the cheapest MLP type),
//    the ratio clamped to [1, max_width_ratio]; a Head has max(vocab, 2·hidden·ratio) classes, where
//    ratio is its forward_ms over the cheapest MLP type's (its GEMM then costs what the layer costs
//    relative to an MLP block). Embeddings have `vocab` rows. d_model, hidden, vocab scale with `scale`.
//  * Parameters: deterministic from (seed, global block index, parameter index, element index), so
//    the same model on any placement starts from the same numbers. Microbatch data (token ids and
//    targets) is deterministic from (seed, microbatch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps::rt {

enum class BlockKind : unsigned char { kEmbedding, kMlp, kHead };
const char* block_kind_name(BlockKind k);  // "embedding", "mlp", "head"

struct BlockSpec {
  BlockKind kind = BlockKind::kMlp;
  int index = 0;      // global block index, 0-based over all stages (seeds the init)
  int layer = -1;     // model layer it stands for (-1: added by the runtime)
  char type = '?';    // layer type symbol ('?' without layer information)
  int hidden = 0;     // MLP hidden width: 512
  int classes = 0;    // Head: number of classes (vocabulary): 256; Embedding: rows
  // Head of a vocabulary-parallel head: which shard (0-based) of how many, and the first global class
  // it holds. An ordinary head is shard 0 of 1 at offset 0.
  int shard = 0;         // 2
  int shards = 1;        // 4
  int class_offset = 0;  // 512

  bool is_head_shard() const { return kind == BlockKind::kHead && shards > 1; }
  // The block whose output is the loss (an ordinary head, or the last shard).
  bool is_loss() const { return kind == BlockKind::kHead && shard == shards - 1; }
};

struct ParamSpec {
  std::string name;  // "s1.b0.w1"
  int rows = 0;      // 512
  int cols = 0;      // 64
  size_t count() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
};

struct ExecModelOptions {
  double scale = 1.0;             // multiplies d_model, hidden and vocab
  uint64_t seed = 1;
  int tokens = 32;                // tokens per microbatch (rows of every activation)
  int d_model = 64;               // width of the activations that flow between blocks
  int hidden = 256;               // MLP hidden width of the cheapest MLP type
  int vocab = 256;                // embedding rows, minimum head classes
  double max_width_ratio = 16;    // caps the cost-derived width ratios
  // Widths from each layer type's params_m instead of its forward_ms: MLP hidden = params/(2·d_model),
  // head classes and embedding rows = params/d_model. For models written by `pipesmith profile`
  // (their params_m are the profiled blocks' exact parameter counts at the same --scale), so that a
  // run uses exactly the blocks that were profiled.
  bool widths_from_params = false;
};

struct ExecModel {
  int tokens = 32;     // rows of an activation
  int d_model = 64;    // columns of an activation
  int vocab_in = 256;  // embedding rows (token ids are < vocab_in)
  int vocab_out = 256; // head classes, all shards together (targets are < vocab_out)
  int microbatches = 1;
  uint64_t seed = 1;
  std::vector<std::vector<BlockSpec>> stages;  // stages[s] = blocks in order
  std::vector<std::string> notes;              // how the mapping was decided

  int num_stages() const { return static_cast<int>(stages.size()); }
  // Parameters of one block / of a whole stage in order (block order, then param order).
  std::vector<ParamSpec> block_params(int stage, int block) const;
  std::vector<ParamSpec> stage_params(int stage) const;
  size_t stage_param_count(int stage) const;
  // Elements of an activation [tokens × d_model].
  size_t boundary_count() const { return static_cast<size_t>(tokens) * d_model; }
  // Elements of the message from `stage` to stage+1 (and of its gradient): the activation, plus the
  // carries (L, t) — 2·tokens more — when the boundary falls inside a vocabulary-sharded head.
  size_t boundary_count(int stage) const;
  // Shards of the model's head (1: an ordinary head).
  int head_shards() const;
  // Where the sharded head is, for messages: "4 shards, stages 6–7" ("2 shards, stage 3").
  std::string describe_sharded_head() const;
  // One line per stage: "stage 1: mlp(h=512, layer 3 'M') mlp(h=256, layer 4 '-')".
  std::string describe() const;
  // Short form for summaries: "embedding, 4 mlp (h 32-64)".
  std::string stage_summary(int stage) const;
};

// How a layer type runs (see the mapping above; position rules aside).
BlockKind block_kind_of(const LayerType& type);

// Builds the executable model. `model` may be null (then one MLP block per stage, sized by the
// stage's fwd_ms); when given and the stages carry layer ranges, one block per layer.
Result<ExecModel> build_exec_model(const Problem& problem, const Model* model,
                                   const ExecModelOptions& options);

// Deterministic initial values of one parameter (count == spec.count()).
std::vector<float> init_param(const ExecModel& m, const BlockSpec& block, int param_index,
                              const ParamSpec& spec);
// Token ids (< vocab_in) and targets (< vocab_out) of a microbatch; `tokens` entries each.
std::vector<int32_t> microbatch_tokens(const ExecModel& m, int mb);
std::vector<int32_t> microbatch_targets(const ExecModel& m, int mb);

}  // namespace ps::rt
