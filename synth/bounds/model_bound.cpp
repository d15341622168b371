#include "synth/bounds/model_bound.h"

#include "ir/problem.h"
#include "synth/bounds/packing_bound.h"
#include "synth/plan/plan_spec.h"
#include "verify/verify.h"

namespace ps {

namespace {

Result<PlanBound> bound_of_plan(const Spec& spec, const PlanBoundRequest& request) {
  PlanSpec words{request.partition.empty() ? "balanced" : request.partition, request.placement,
                 request.stages_per_device};
  if (words.placement.empty())
    words.placement =
        words.stages_per_device > 1 && !is_layout_partition(words.partition) ? "interleaved" : "sequential";
  auto plan = resolve_plan(spec, words);
  if (!plan.ok()) return plan.status();
  PlanBound pb;
  pb.partition = std::move(plan->partition);
  pb.placement = std::move(plan->placement);
  auto problem = make_problem(spec, pb.partition, pb.placement);
  if (!problem.ok()) return problem.status();
  pb.bound_ms = lower_bound_ms(*problem);
  return pb;
}

}  // namespace

Result<ModelBound> model_bound(const Spec& spec, const std::optional<PlanBoundRequest>& plan) {
  const int P = spec.cluster.devices, M = spec.pipeline.microbatches;
  auto g = global_lower_bound(spec, P, M, spec.cluster.memory_gb);
  if (!g.ok()) return g.status();
  ModelBound b;
  b.global = *g;
  b.packing_ms = layer_packing_bound_ms(spec.model, P, M);
  b.bound_ms = g->bound_ms;
  b.binding = g->binding;
  if (b.packing_ms > b.bound_ms) {
    b.bound_ms = b.packing_ms;
    b.binding = "layer_packing";
  }
  if (plan) {
    auto pb = bound_of_plan(spec, *plan);
    if (!pb.ok()) return pb.status();
    b.plan = std::move(*pb);
  }
  return b;
}

}  // namespace ps
