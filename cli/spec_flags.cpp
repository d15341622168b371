#include "cli/spec_flags.h"

#include <fmt/format.h>

#include <cstdint>

#include "cli/number_flags.h"

namespace ps::cli {

void add_spec_flags(CLI::App* sub, SpecFlags* flags) {
  sub->add_option("model", flags->model_path,
                  "Model YAML (may also hold cluster: and pipeline: blocks)")
      ->required();
  sub->add_option("--cluster", flags->cluster_path,
                  "Cluster YAML (overrides the model file's cluster: block)");
  sub->add_option("--devices", flags->devices, "Number of devices P (overrides cluster.devices)");
  sub->add_option("--microbatches", flags->microbatches,
                  "Number of microbatches M (overrides pipeline.microbatches)");
  sub->add_option("--memory-limit-gb", flags->memory_limit_gb,
                  "Memory per device in GB (overrides cluster.memory_gb; 0 = unlimited)")
      ->check(flags::memory_limit_gb());
}

Result<Spec> load_spec_from_flags(const SpecFlags& flags) {
  if (flags.devices && *flags.devices < 1)
    return Status::bad_input(fmt::format("--devices must be at least 1, got {}", *flags.devices));
  if (flags.microbatches && *flags.microbatches < 1)
    return Status::bad_input(
        fmt::format("--microbatches must be at least 1, got {}", *flags.microbatches));
  if (flags.memory_limit_gb && !(*flags.memory_limit_gb >= 0))
    return Status::bad_input(fmt::format("--memory-limit-gb must be >= 0 (0 = unlimited), got {}",
                                         *flags.memory_limit_gb));
  SpecOverrides o;
  o.devices = flags.devices;
  o.microbatches = flags.microbatches;
  o.memory_gb = flags.memory_limit_gb;
  return load_spec(flags.model_path, flags.cluster_path, o);
}

Status check_stages_per_device(const Spec& spec, int stages_per_device) {
  if (stages_per_device == 0) return Status::ok();
  if (stages_per_device < 1)
    return Status::bad_input(fmt::format("--stages-per-device must be >= 1, got {}", stages_per_device));
  const int64_t P = spec.cluster.devices, L = static_cast<int64_t>(spec.model.layers.size());
  if (int64_t{stages_per_device} * P > L)
    return Status::bad_input(fmt::format(
        "--stages-per-device {} on {} devices makes {} stages, more than the model's {} layers (a stage holds at "
        "least one layer)",
        stages_per_device, P, int64_t{stages_per_device} * P, L));
  return Status::ok();
}

}  // namespace ps::cli
