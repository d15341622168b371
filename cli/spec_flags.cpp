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

}  // namespace ps::cli
