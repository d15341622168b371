// Links the installed libraries: a model from YAML text, the 1F1B baseline on it, the checker's
// verdict and the simulated iteration. Prints "VALID <makespan_ms>".
#include <cstdio>

#include "ir/model.h"
#include "synth/baselines/baseline_plan.h"

int main() {
  const char* model = R"(model:
  name: two-layer
  layer_types:
    A: {forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 10, wgrad_stash_mb: 0, output_mb: 0, params_m: 1}
  layers:
    - {type: A, repeat: 2}
cluster: {devices: 2, memory_gb: 0}
pipeline: {microbatches: 4}
)";
  auto spec = ps::parse_spec(model, "consumer.yaml");
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.status().str().c_str());
    return 1;
  }
  auto run = ps::run_baseline(*spec, ps::BaselineRequest{ps::BaselineKind::k1F1B, 0, ps::PartitionChoice{}});
  if (!run.ok()) {
    std::fprintf(stderr, "%s\n", run.status().str().c_str());
    return 1;
  }
  std::printf("%s %.3f\n", run->report.valid ? "VALID" : "INVALID", run->report.sim->makespan_ms);
  return run->report.valid ? 0 : 3;
}
