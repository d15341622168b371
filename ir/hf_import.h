// hf_import.h — a model YAML from a Hugging Face `config.json` (`pipesmith import hf`).
//
// Guarantees:
//  * Supported `model_type`s (hf_model_types()): the layer list follows the config's layer-type
//    fields (layer_types, sliding_window_pattern, full_attention_interval, attn_type_list,
//    hybrid_override_pattern, first_k_dense_replace + moe_layer_freq, decoder_sparse_step +
//    mlp_only_layers) in order; MTP modules (num_nextn_predict_layers) and tie_word_embeddings are
//    honoured; module names are the transformers model's (`model.layers.{i}`, ...).
//  * An unknown model_type is an error naming the supported ones; a field the model type needs and
//    the config lacks, or holds with the wrong type, is an error naming it at its file:line:col (the
//    object's when absent). docs/inputs.md, "Import", lists what each field maps to.
//  * The result is the YAML text of ir/model_import.h (deterministic; it loads).
#pragma once

#include <string>
#include <string_view>

#include "ir/config_json.h"
#include "ir/model_import.h"
#include "ir/status.h"

namespace ps {

// "llama, mistral, ..." (for messages and --help).
std::string hf_model_types();

// The model a parsed config describes; `name` is the model's name in the YAML.
Result<ImportedModel> hf_model(const JsonValue& config, const std::string& name);

// Reads `config_path` and returns the model YAML (the name: the file name without .json).
Result<std::string> import_hf_config(const std::string& config_path, const ImportOptions& opt);

}  // namespace ps
