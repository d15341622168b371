#include "synth/bounds/model_bound.h"

#include <nlohmann/json.hpp>

#include "ir/json_write.h"
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

Result<ModelBound> model_bound(const Spec& spec, const std::optional<PlanBoundRequest>& plan,
                               int64_t window_lp_budget) {
  const int P = spec.cluster.devices, M = spec.pipeline.microbatches;
  auto g = global_lower_bound(spec, P, M, spec.cluster.memory_gb, GlobalBoundOptions{window_lp_budget});
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

std::string format_model_bound_json(const Spec& spec, const ModelBound& b) {
  nlohmann::ordered_json j;
  j["model"] = spec.model.name;
  j["devices"] = spec.cluster.devices;
  j["microbatches"] = spec.pipeline.microbatches;
  j["bound_ms"] = b.bound_ms;
  j["binding"] = b.binding;
  j["terms_ms"] = {{"total_work", b.global.total_work_ms},
                   {"ramp", b.global.ramp_ms},
                   {"heaviest_layer", b.global.heaviest_layer_ms},
                   {"critical_path", b.global.critical_path_ms},
                   {"backward_ramp", b.global.backward_ramp_ms},
                   {"ramp_packing", b.global.ramp_packing_ms},
                   {"backward_ramp_packing", b.global.backward_ramp_packing_ms},
                   {"forward_release", b.global.forward_release_ms},
                   {"release_packing", b.global.release_packing_ms},
                   {"window_packing", b.global.window_packing_ms},
                   {"window_lp", b.global.window_lp_ms},
                   {"heavy_pairs", b.global.heavy_pairs_ms},
                   {"layer_packing", b.packing_ms}};
  j["heaviest_layer"] = b.global.heaviest_layer;
  j["model_state_gb"] = b.global.model_state_gb;
  j["memory_limit_gb"] = b.global.memory_limit_gb;
  j["min_devices_for_memory"] = b.global.min_devices_for_memory;
  j["memory_feasible"] = b.global.memory_feasible;
  if (!b.global.memory_feasible) j["memory_reason"] = b.global.memory_reason;
  if (b.plan) {
    nlohmann::ordered_json pj;
    nlohmann::ordered_json ranges = nlohmann::ordered_json::array();
    for (const auto& r : b.plan->partition) ranges.push_back({r.first, r.last});
    pj["partition"] = ranges;
    pj["placement"] = b.plan->placement;
    pj["bound_ms"] = b.plan->bound_ms;
    j["plan"] = pj;
  }
  return dump_json(j, 2);
}

}  // namespace ps
