// spec_flags.h — the input flags every model-reading subcommand shares:
//   MODEL.yaml [--cluster CLUSTER.yaml] [--devices P] [--microbatches M] [--memory-limit-gb X]
// add_spec_flags declares them on a subcommand; load_spec_from_flags reads the files and applies
// the overrides (load_spec validates; errors carry file:line:col). Flag values are checked here
// (P >= 1, M >= 1, X >= 0) so every command words those errors the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "ir/model.h"
#include "ir/status.h"

namespace ps::cli {

// The mesh flags (ir/mesh.h): --gpus, --tensor-parallel, --context-parallel, --expert-parallel,
// --expert-tensor-parallel, --data-parallel, --optimizer, --cp-comm-type, --micro-batch, --global-batch,
// --sequence-parallel. Each maps one field of the `parallel:` section (or cluster.gpus).
struct MeshFlags {
  std::optional<long long> gpus, tensor, context, expert, expert_tensor, data, micro_batch, global_batch;
  std::optional<std::string> optimizer, cp_comm;
  bool sequence_parallel = false;
};
void add_mesh_flags(CLI::App* sub, MeshFlags* flags);
// The flags as the library's overrides (the library validates them).
ParallelInput mesh_overrides(const MeshFlags& flags);

struct SpecFlags {
  std::string model_path;
  std::string cluster_path;
  std::optional<int> devices;
  std::optional<int> microbatches;
  std::optional<double> memory_limit_gb;
  MeshFlags mesh;
};

// Adds the positional MODEL and the four options to `sub`; values land in *flags (which must
// outlive the parse).
void add_spec_flags(CLI::App* sub, SpecFlags* flags);

// Loads the spec with the flags as overrides (--devices and --microbatches were checked while parsing,
// flags::option; load_spec checks every override again in the library's words).
Result<Spec> load_spec_from_flags(const SpecFlags& flags);

}  // namespace ps::cli
