// model_write.h — the one writer of model YAML files (schema 1, docs/inputs.md). `pipesmith import`
// (ir/model_import.h) and `pipesmith profile` (runtime/profile.h) describe the file as a
// ModelDocument and format it here, so every model file pipesmith writes has one layout:
//
//   # header                                    (comment lines, as given)
//   schema: 1
//   model:
//     name: llama-2-7b-hf
//     architecture:                             (when given: one key a line)
//       hidden_size: 4096                      # hidden_size      (comment aligned at column 41)
//     hardware: {peak_tflops: 989, ...}         (when given)
//     layer_types:
//       T: {name: decoder, kind: dense_block}  # comment
//     layers: "ETTL"                            (a string of symbols), or
//     layers:
//       - {type: T, repeat: 32, module: "model.layers.{i}"}
//   # cluster comment                           (when given)
//   cluster: {name: default-8-gpus, devices: 8, memory_gb: 80}  # comment
//   pipeline:
//     microbatches: 16
//   parallel:                                   (when given)
//     tensor: 2  # comment
//
// Guarantees: keys and values are written as given — each is YAML text the caller made (plain, or
// yamlu::quote_scalar / yamlu::format_number / format_flow_map output) — so the output is a pure
// function of the document (deterministic). The writer does not check that the file loads: callers
// that promise it parse what they wrote (ir/model.h).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ps {

// One `key: value` of a map, with an optional trailing comment (block maps only).
struct YamlItem {
  YamlItem(std::string k, std::string v, std::string c = "")
      : key(std::move(k)), value(std::move(v)), comment(std::move(c)) {}
  std::string key;      // "hidden_size", or a quoted symbol "\"-\""
  std::string value;    // "4096", "{bandwidth_gb_per_s: 450, latency_us: 5}", "\"model.layers.{i}\""
  std::string comment;  // "" for none
};

// "{k: v, k2: v2}" (comments of the items are not written).
std::string format_flow_map(const std::vector<YamlItem>& items);

struct ModelDocument {
  std::string header;                     // comment lines, each ending in '\n' ("# Costs: ...\n")
  std::string name;                       // YAML text of model.name
  std::vector<YamlItem> architecture;     // model.architecture, one line each (empty: none)
  std::vector<YamlItem> hardware;         // model.hardware as a flow map (empty: none)
  std::vector<YamlItem> layer_types;      // symbol -> flow map of the type (value: format_flow_map)
  std::optional<std::string> layer_string;           // model.layers as one string (YAML text)
  std::vector<std::vector<YamlItem>> layer_entries;  // else model.layers as entries, each a flow map
  std::string cluster_note;               // comment lines before cluster: (each ending in '\n')
  std::vector<YamlItem> cluster;          // the cluster as a flow map (empty: none)
  std::string cluster_comment;            // trailing comment of the cluster line
  std::vector<YamlItem> pipeline;         // pipeline: one line each (empty: none)
  std::vector<YamlItem> parallel;         // parallel: one line each, with comments (empty: none)
};

std::string format_model_yaml(const ModelDocument& doc);

}  // namespace ps
