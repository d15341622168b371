// model_bound.h — `pipesmith bound` as a library call: the best lower bound on a model's iteration
// time over every partition, placement and order, and optionally the checker's bound for one plan.
//
//   bound = max(global_lower_bound terms, layer packing bound)   (synth/bounds/global_bound.h,
//                                                                  synth/bounds/packing_bound.h)
//
// Guarantees: a model whose states cannot fit the devices is no error — `global.memory_feasible`
// is false and the time bound is still computed (the caller decides; the CLI exits 2). A plan is
// read as synth reads it (synth/plan/plan_spec.h); without a placement it is sequential, or
// interleaved when stages_per_device is above 1 (a Megatron layout keeps its own placement).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"
#include "synth/bounds/global_bound.h"

namespace ps {

struct PlanBoundRequest {
  std::string partition;     // empty: balanced
  std::string placement;     // empty: sequential, or interleaved when stages_per_device > 1
  int stages_per_device = 0;
};

struct PlanBound {
  Partition partition;
  std::vector<int> placement;
  double bound_ms = 0;  // verify's lower_bound_ms of that plan
};

struct ModelBound {
  GlobalBound global;        // the terms over all plans (and the memory verdict)
  double packing_ms = 0;     // whole layers on P devices: M × the best packing's busiest device
  double bound_ms = 0;       // max(global.bound_ms, packing_ms)
  std::string binding;       // the term giving bound_ms: global.binding or "layer_packing"
  std::optional<PlanBound> plan;  // when a plan was asked for
};

// window_lp_budget: global_bound.h's window_lp term (0 leaves it out: `pipesmith plan` bounds many meshes).
Result<ModelBound> model_bound(const Spec& spec, const std::optional<PlanBoundRequest>& plan = std::nullopt,
                               int64_t window_lp_budget = kWindowLpBudget);

// The bound as JSON (`pipesmith bound --json`; keys: model, devices, microbatches, bound_ms, binding,
// terms_ms, heaviest_layer, model_state_gb, memory_limit_gb, min_devices_for_memory,
// memory_feasible, memory_reason when infeasible, and plan {partition, placement, bound_ms}).
std::string format_model_bound_json(const Spec& spec, const ModelBound& b);

}  // namespace ps
