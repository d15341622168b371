#include "synth/baselines/baseline_plan.h"

#include <fmt/format.h>

#include "synth/certify.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "synth/plan/plan_spec.h"

namespace ps {

namespace {

// The partition and placement a run uses, with words for the summary.
struct Plan {
  Partition partition;
  std::vector<int> placement;
  std::string partition_desc;
  std::vector<std::string> notes;
};

Result<Plan> make_plan(const Spec& spec, BaselineKind kind, const BaselineRequest& a) {
  const int P = spec.cluster.devices;
  const char* name = baseline_name(kind);
  Plan plan;
  if (is_layout_partition(a.partition)) {
    auto lp = layout_plan(spec, a.partition);
    if (!lp.ok()) return lp.status();
    int V = lp->stages_per_device;
    auto shape = baseline_shape(kind, a.stages_per_device);
    if (!shape.ok()) return shape.status();
    bool fits = shape->placement == PlacementKind::kLooped ? V >= 2 : V == shape->stages_per_device;
    if (!fits || (a.stages_per_device != 0 && a.stages_per_device != V))
      return Status::bad_input(fmt::format(
          "pipeline layout \"{}\" gives {} stages = {} per device on P = {}, but {} runs {}",
          a.partition, lp->partition.size(), V, P, name,
          shape->placement == PlacementKind::kLooped
              ? fmt::format("{} per device",
                            a.stages_per_device != 0 ? std::to_string(a.stages_per_device) : ">= 2")
              : fmt::format("{} per device", shape->stages_per_device)));
    plan.partition = lp->partition;
    if (shape->placement == PlacementKind::kVShape) {
      plan.placement = placement_vshape(P);
      plan.notes.push_back(fmt::format(
          "{} places the layout's stages in a V (device d holds stages d and 2P-1-d), not looped "
          "as Megatron would",
          name));
    } else {
      plan.placement = lp->placement;
    }
    plan.partition_desc = fmt::format("Megatron layout \"{}\"", a.partition);
    return plan;
  }
  auto shape = baseline_shape(kind, a.stages_per_device);
  if (!shape.ok()) return shape.status();
  int S = shape->stages_per_device * P;
  auto part = partition_by_name(spec, S, a.partition);
  if (!part.ok()) return part.status();
  plan.partition = *part;
  plan.placement = baseline_placement(*shape, P);
  plan.partition_desc = a.partition;
  return plan;
}

}  // namespace

Result<BaselineRun> run_baseline(const Spec& spec, const BaselineRequest& request) {
  auto plan = make_plan(spec, request.kind, request);
  if (!plan.ok()) return plan.status();
  auto problem = make_problem(spec, plan->partition, plan->placement);
  if (!problem.ok()) return problem.status();
  auto generated = make_baseline(*problem, request.kind);
  if (!generated.ok()) return generated.status();
  VerifyOptions vo;
  vo.semantics = Semantics::kRendezvous;
  auto cert = certify_schedule(*generated, vo);
  if (!cert.ok()) return cert.status();
  BaselineRun run;
  run.schedule = std::move(cert->schedule);
  run.report = std::move(cert->report);
  run.partition = std::move(plan->partition);
  run.placement = std::move(plan->placement);
  run.partition_desc = std::move(plan->partition_desc);
  run.notes = std::move(plan->notes);
  auto gb = global_lower_bound(spec, spec.cluster.devices, spec.pipeline.microbatches, spec.cluster.memory_gb);
  if (gb.ok()) run.global = *gb;
  return run;
}

}  // namespace ps
