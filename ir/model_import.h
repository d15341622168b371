// model_import.h — a model as an import reads it from someone else's description (a Hugging Face
// config.json, Megatron-LM arguments), and the model YAML (schema 1, docs/inputs.md) written from it.
//
// Guarantees of write_imported_model:
//  * The YAML derives every number analytically (`kind:` plus `architecture:`, docs/inputs.md,
//    "Analytic costs"); each architecture line carries, as a comment, the source field it came from.
//  * Decoder layers appear in order, consecutive equal layers as one `repeat:` entry; a decoder layer
//    is one layer of the YAML, or (with `sublayers`) its mixer and its MLP/MoE as two layers joined by
//    `joins_next`. MTP modules follow the head and read the embedding and the last hidden state
//    through `inputs:`. Every layer names its module in the source framework's naming.
//  * The output is a function of the description and the options alone (deterministic), and it loads:
//    the writer parses what it wrote (ir/model.h) and returns that loader's error, if any, as its own.
//  * What the YAML cannot hold is refused before it is built (kBadInput, at the MTP field's value when
//    the MTP modules are the cause): more than limits::kMaxLayers layers in all, or more layer types
//    than there are one-character symbols (each MTP module's sharded head is a type of its own).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"

namespace ps {

// One `architecture:` number and where it came from ("intermediate_size", "--ffn-hidden-size").
struct ArchEntry {
  std::string key;     // "ffn_hidden_size"
  std::string value;   // "11008" (YAML text)
  std::string source;  // "intermediate_size"
};

// The sublayers a decoder layer is made of.
enum class Sublayer {
  kAttention,         // softmax attention over the whole (causal) context
  kSlidingAttention,  // softmax attention within a window (architecture attention_window)
  kMla,               // multi-head latent attention
  kLinearAttention,   // lightning (linear) attention
  kGatedDeltaNet,     // gated DeltaNet (linear attention with the delta rule)
  kMamba,             // Mamba-2 mixer
  kMlp,               // dense MLP
  kMoe,               // mixture of experts
};

// A decoder layer: its sublayers in order (a mixer, then an MLP or MoE; a hybrid model's layer has
// one of them).
struct DecoderLayer {
  std::vector<Sublayer> parts;
  bool operator==(const DecoderLayer& o) const { return parts == o.parts; }
};

// Module names in the source framework ("{i}": the decoder layer's index).
struct ModuleNaming {
  std::string embedding;   // "model.embed_tokens"
  std::string layer;       // "model.layers.{i}"
  std::string final_norm;  // "model.norm"
  std::string head;        // "lm_head"
  std::string mtp;         // "model.layers.{i}" (i = decoder layers + j for MTP module j), "mtp.layers.{j}"
};

struct ImportedModel {
  std::string name;                 // "llama-2-7b-hf"
  std::vector<std::string> header;  // comment lines on the source, the layers, the approximations
  std::vector<ArchEntry> arch;      // the model's `architecture:` block, in order
  std::map<Sublayer, std::vector<ArchEntry>> overrides;  // per sublayer kind (a window, a gate)
  std::vector<DecoderLayer> layers;                      // the decoder layers, in order
  int mtp_modules = 0;      // multi-token-prediction modules after the head
  std::string mtp_source;   // the field or flag that gave mtp_modules ("num_nextn_predict_layers")
  SourceLoc mtp_loc;        // where its value is (messages about the MTP modules point there)
  DecoderLayer mtp_block;   // the transformer block of each MTP module
  bool moe = false;         // some layer is an MoE (the hardware block then sets the expert efficiency)
  // A vision encoder before the language model (a multimodal config): `vision_layers` non-causal
  // attention + MLP blocks with their own architecture, feeding the text embedding.
  int vision_layers = 0;
  std::vector<ArchEntry> vision_arch;
  std::string vision_module;  // "model.vision_tower.vision_model.encoder.layers.{i}"
  ModuleNaming names;
  std::optional<long long> seq_length;        // when the source gives it (Megatron's --seq-length)
  std::optional<long long> micro_batch_size;  // likewise
  std::string seq_length_source;              // "--seq-length"
  std::string micro_batch_size_source;
  // The mesh the source trains with (Megatron's --tensor-model-parallel-size, ...): the `parallel:`
  // section (ir/mesh.h), in order; empty: none written.
  std::vector<ArchEntry> parallel;
  std::optional<long long> pipeline_devices;  // --pipeline-model-parallel-size: the cluster's devices
};

// What the import adds that a config does not say.
struct ImportOptions {
  std::optional<long long> seq_length;        // tokens per sequence (default: the source's, else 4096)
  std::optional<long long> micro_batch_size;  // sequences per microbatch (default: the source's, else 1)
  long long vocab_shards = 1;                 // K: the head (and each MTP head) as K vocabulary shards
  bool sublayers = false;                     // mixer and MLP/MoE as two layers joined by joins_next
};

inline constexpr long long kDefaultImportSeqLength = 4096;

// Shared experts of `shared_ffn` hidden units in all (`source` names the field): as
// moe_shared_experts = shared_ffn / moe_ffn_hidden_size when that divides, else one shared expert of
// moe_shared_ffn_hidden_size, so that two sources of one model write the same numbers. Call after
// moe_ffn_hidden_size is in m.arch.
void add_shared_experts(ImportedModel& m, long long shared_ffn, const std::string& source);

// "attention", "sliding-attention", ... (the layer type names the YAML uses).
const char* sublayer_name(Sublayer s);

// The model YAML text; `source_file` is named in messages about the written YAML.
Result<std::string> write_imported_model(const ImportedModel& m, const ImportOptions& opt);

}  // namespace ps
