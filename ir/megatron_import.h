// megatron_import.h — a model YAML from Megatron-LM arguments (`pipesmith import megatron`).
//
// Guarantees:
//  * The argument file is read as a training script passes it: whitespace-separated tokens, `#`
//    comments and `\` line continuations ignored, quotes removed, `--flag value` and `--flag=value`
//    alike; flags that describe no layer (optimizer, parallelism, data) are ignored.
//  * The same model gives the same YAML as the Hugging Face import (ir/hf_import.h) except for the
//    comments, the model's name and the module names (Megatron's: `decoder.layers.{i}`, ...).
//  * A flag the model needs and the file lacks, or a value that is not what the flag takes, is an
//    error naming the flag at its file:line:col. A --pipeline-model-parallel-layout is given in the
//    header as the fixed partition to compare with (`synth --partition LAYOUT`, which checks it).
#pragma once

#include <string>

#include "ir/model_import.h"
#include "ir/status.h"

namespace ps {

// The model a Megatron argument text describes; `file_name` locates errors, `name` names the model.
Result<ImportedModel> megatron_model(const std::string& text, const std::string& file_name, const std::string& name);

// Reads `args_path` and returns the model YAML (the name: the file name without its extension).
Result<std::string> import_megatron_args(const std::string& args_path, const ImportOptions& opt);

}  // namespace ps
