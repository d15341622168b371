// profile.h — `pipesmith profile`: measure each layer type's F, I, W time and memory on a backend
// and write a model YAML (schema 1, docs/inputs.md) with the profiled numbers.
//
// Method: each layer type runs as the block the executable model gives it (runtime/exec_model.h,
// same widths as in `pipesmith run` at the same --scale), inside a 1-device pipeline embedding →
// block → head so that it gets real inputs and gradients; the executor replays warmup + repeats
// microbatches (F of every stage, then I, then W) and the block's op times are the medians over
// the measured microbatches (host: wall clock; cuda: CUDA events on its compute stream).
// Memory per microbatch, from the block's real buffers (runtime/memory_rule.h):
// activation_mb = max(bytes after F, bytes after I), wgrad_stash_mb = bytes after I (this model's
// I keeps the gradients W needs, so it may hold more than F did; the max keeps the schema's
// stash <= activation and never under-estimates), output_mb = the [tokens × d_model] fp32 output
// (0 for a head), params_m = the block's parameters / 1e6. MB = 1e6 bytes.
#pragma once

#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/status.h"
#include "runtime/backend.h"
#include "runtime/exec_model.h"
#include "runtime/host_memory.h"

namespace ps::rt {

struct ProfileOptions {
  ExecModelOptions model;   // widths (scale), tokens, seed
  int warmup = 2;           // microbatches not measured
  int repeats = 5;          // microbatches measured (median)
  double timeout_s = 60;    // watchdog
};

struct TypeProfile {
  char symbol = '?';
  std::string name;
  BlockKind kind = BlockKind::kMlp;
  int width = 0;                 // MLP hidden width / head classes / embedding rows
  double forward_ms = 0;
  double backward_input_ms = 0;
  double backward_weight_ms = 0;
  double activation_mb = 0;
  double wgrad_stash_mb = 0;
  double output_mb = 0;
  double params_m = 0;
  bool split_backward = true;
};

struct ProfileResult {
  std::string backend;         // "host"
  std::string where;           // "host thread 0", "cuda:0 NVIDIA H200"
  int tokens = 0;
  int d_model = 0;
  double scale = 1;
  std::vector<TypeProfile> types;  // by symbol
};

// The host memory profile_layer_types allocates: the largest of its measuring runs (runtime/host_memory.h).
Result<MemoryEstimate> estimate_profile_memory(const Spec& spec, const ProfileOptions& options);

// `backend` must run exactly one device (device 0).
Result<ProfileResult> profile_layer_types(const Spec& spec, Backend& backend, const ProfileOptions& options);

// The model YAML (written by ir/model_write.h, the writer of every model file): the input model's
// layers with the profiled layer types, plus its cluster and pipeline sections, and a header comment
// saying how the numbers were measured.
std::string format_profiled_model_yaml(const Spec& spec, const ProfileResult& result, const std::string& source);
// A table of the measured numbers.
std::string format_profile_table(const ProfileResult& result);

}  // namespace ps::rt
