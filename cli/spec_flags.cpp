#include "cli/spec_flags.h"

#include <fmt/format.h>

#include <cstdint>

#include "cli/number_flags.h"
#include "ir/limits.h"
#include "synth/plan/placement.h"

namespace ps::cli {

void add_spec_flags(CLI::App* sub, SpecFlags* flags) {
  sub->add_option("model", flags->model_path,
                  "Model YAML (may also hold cluster: and pipeline: blocks)")
      ->required();
  sub->add_option("--cluster", flags->cluster_path,
                  "Cluster YAML (overrides the model file's cluster: block)");
  sub->add_option("--devices", flags->devices, "Number of devices P (overrides cluster.devices)")
      ->check(flags::option(limits::option::kDevices));
  sub->add_option("--microbatches", flags->microbatches,
                  "Number of microbatches M (overrides pipeline.microbatches)")
      ->check(flags::option(limits::option::kMicrobatches));
  sub->add_option("--memory-limit-gb", flags->memory_limit_gb,
                  "Memory per device in GB (overrides cluster.memory_gb; 0 = unlimited)")
      ->check(flags::memory_limit_gb());
  add_mesh_flags(sub, &flags->mesh);
}

void add_mesh_flags(CLI::App* sub, MeshFlags* f) {
  namespace opt = limits::option;
  sub->add_option("--gpus", f->gpus, "GPUs of the mesh (overrides cluster.gpus; docs/mesh.md)")
      ->check(flags::option(opt::kMeshGpus));
  sub->add_option("--tensor-parallel", f->tensor, "Tensor-parallel degree (parallel.tensor)")
      ->check(flags::option(opt::kMeshTensor));
  sub->add_option("--context-parallel", f->context, "Context-parallel degree (parallel.context)")
      ->check(flags::option(opt::kMeshContext));
  sub->add_option("--expert-parallel", f->expert, "Expert-parallel degree (parallel.expert)")
      ->check(flags::option(opt::kMeshExpert));
  sub->add_option("--expert-tensor-parallel", f->expert_tensor,
                  "Tensor-parallel degree of the experts (parallel.expert_tensor)")
      ->check(flags::option(opt::kMeshExpertTensor));
  sub->add_option("--data-parallel", f->data,
                  "Data-parallel degree (parallel.data; default: the GPUs over pipeline x tensor x context)")
      ->check(flags::option(opt::kMeshData));
  sub->add_option("--optimizer", f->optimizer,
                  "Optimizer-state sharding: replicated, distributed (ZeRO-1) or fsdp (ZeRO-3) (parallel.optimizer)")
      ->check(CLI::IsMember({"replicated", "distributed", "fsdp"}));
  sub->add_option("--cp-comm-type", f->cp_comm,
                  "How context parallelism moves K and V: p2p (the K/V ring, overlapped) or all_gather (exposed) "
                  "(parallel.cp_comm_type; default p2p)")
      ->check(CLI::IsMember({"p2p", "all_gather"}));
  sub->add_option("--micro-batch", f->micro_batch, "Sequences per microbatch (parallel.micro_batch)")
      ->check(flags::option(opt::kMeshMicroBatch));
  sub->add_option("--global-batch", f->global_batch,
                  "Sequences per iteration (parallel.global_batch); M = global / (micro-batch x data)")
      ->check(flags::option(opt::kMeshGlobalBatch));
  sub->add_flag("--sequence-parallel", f->sequence_parallel, "Sequence parallelism with tensor parallelism "
                                                             "(parallel.sequence_parallel)");
}

ParallelInput mesh_overrides(const MeshFlags& f) {
  ParallelInput o;
  o.gpus = f.gpus;
  o.tensor = f.tensor;
  o.context = f.context;
  o.expert = f.expert;
  o.expert_tensor = f.expert_tensor;
  o.data = f.data;
  o.micro_batch = f.micro_batch;
  o.global_batch = f.global_batch;
  o.optimizer = f.optimizer;
  o.cp_comm = f.cp_comm;
  if (f.sequence_parallel) o.sequence_parallel = true;
  return o;
}

Result<Spec> load_spec_from_flags(const SpecFlags& flags) {
  SpecOverrides o;
  o.devices = flags.devices;
  o.microbatches = flags.microbatches;
  o.memory_gb = flags.memory_limit_gb;
  o.parallel = mesh_overrides(flags.mesh);
  return load_spec(flags.model_path, flags.cluster_path, o);
}

}  // namespace ps::cli
