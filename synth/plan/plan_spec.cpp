// plan_spec.cpp — see plan_spec.h.
#include "synth/plan/plan_spec.h"

#include <fmt/format.h>

#include <cstdint>

#include "ir/limits.h"
#include "synth/baselines/baselines.h"
#include "synth/plan/partition.h"

namespace ps {

Status check_stages_per_device(const Spec& spec, int stages_per_device, std::string_view name) {
  if (stages_per_device == 0) return Status::ok();
  PS_RETURN_IF_ERROR(limits::check_option(limits::option::kStagesPerDevice, stages_per_device, name));
  const int64_t P = spec.cluster.devices, L = static_cast<int64_t>(spec.model.layers.size());
  if (int64_t{stages_per_device} * P > L)
    return Status::bad_input(fmt::format(
        "{} {} on {} devices makes {} stages, more than the model's {} layers (a stage holds at least one layer)",
        name, stages_per_device, P, int64_t{stages_per_device} * P, L));
  return Status::ok();
}

bool is_layout_partition(const std::string& partition) {
  return !is_partition_method_name(partition) && looks_like_megatron_layout(partition);
}

Result<PlanFixed> read_plan_given(const Spec& spec, const PlanGiven& given, std::string_view stages_name) {
  PlanFixed out;
  if (given.stages_per_device) {
    // Given, so 0 is no "not given" here.
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kStagesPerDevice, *given.stages_per_device, stages_name));
    PS_RETURN_IF_ERROR(check_stages_per_device(spec, *given.stages_per_device, stages_name));
    out.stages_per_device = *given.stages_per_device;
  }
  out.partition = given.partition;
  const bool layout = given.partition && is_layout_partition(*given.partition);
  if (given.placement) {
    out.placement = given.placement;
  } else if (given.stages_per_device) {
    out.placement = out.stages_per_device > 1 && !layout ? "interleaved" : "sequential";
  }
  return out;
}

Result<PartitionChoice> parse_partition_choice(const std::string& word) {
  if (word == "balanced") return PartitionChoice{PartitionMethod::kBalanced, ""};
  if (word == "balanced-memory") return PartitionChoice{PartitionMethod::kBalancedMemory, ""};
  if (word == "even") return PartitionChoice{PartitionMethod::kEven, ""};
  if (looks_like_megatron_layout(word)) {
    auto layout = parse_megatron_layout(word);
    if (!layout.ok()) return layout.status();
    return PartitionChoice{PartitionMethod::kMegatronLayout, word};
  }
  return unknown_partition(word);
}

Result<PlacementChoice> parse_placement_choice(const std::string& word) {
  const std::string w = canonical_placement_word(word);
  if (w == "sequential") return PlacementChoice{PlacementKind::kSequential, {}};
  if (w == "looped") return PlacementChoice{PlacementKind::kLooped, {}};
  if (w == "vshape") return PlacementChoice{PlacementKind::kVShape, {}};
  auto list = parse_device_list(w);
  if (!list.ok()) return list.status();
  return PlacementChoice{PlacementKind::kExplicit, std::move(*list)};
}

std::string partition_choice_word(const PartitionChoice& c) {
  switch (c.method) {
    case PartitionMethod::kBalanced: return "balanced";
    case PartitionMethod::kBalancedMemory: return "balanced-memory";
    case PartitionMethod::kEven: return "even";
    case PartitionMethod::kMegatronLayout: return c.layout;
  }
  return "balanced";
}

std::string placement_choice_word(const PlacementChoice& c) {
  switch (c.kind) {
    case PlacementKind::kSequential: return "sequential";
    case PlacementKind::kLooped: return "interleaved";
    case PlacementKind::kVShape: return "vshape";
    case PlacementKind::kExplicit: {
      std::string s;
      for (int d : c.devices) s += (s.empty() ? "" : ",") + std::to_string(d);
      return s;
    }
  }
  return "sequential";
}

PlanSpec plan_words(const PartitionChoice& partition, const PlacementChoice& placement, int stages_per_device) {
  return PlanSpec{partition_choice_word(partition), placement_choice_word(placement), stages_per_device};
}

Result<LayoutPlan> layout_plan(const Spec& spec, const std::string& text) {
  auto layout = parse_megatron_layout(text);
  if (!layout.ok()) return layout.status();
  return apply_megatron_layout(*layout, spec.model, spec.cluster.devices);
}

namespace {

// The partition a method cuts into `stages` stages.
Result<Partition> method_partition(const Spec& spec, int stages, PartitionMethod method) {
  switch (method) {
    case PartitionMethod::kBalanced: return balanced_partition(spec, stages, PartitionCost::kTime);
    case PartitionMethod::kBalancedMemory: return balanced_partition(spec, stages, PartitionCost::kTimeThenMemory);
    case PartitionMethod::kEven: return even_partition(spec, stages);
    case PartitionMethod::kMegatronLayout: break;
  }
  PS_ASSERT(false, "method_partition: a Megatron layout is cut by layout_plan");
  return Status::bad_input("no partition method");
}

}  // namespace

Result<int> placement_stage_count(const PlacementChoice& placement, int stages_per_device, int P) {
  switch (placement.kind) {
    case PlacementKind::kSequential:
      if (stages_per_device > 1) {
        return Status::bad_input(fmt::format(
            "placement sequential puts one stage on each device; for stages_per_device {} use placement "
            "interleaved or vshape",
            stages_per_device));
      }
      return P;
    case PlacementKind::kLooped: return (stages_per_device ? stages_per_device : 2) * P;
    case PlacementKind::kVShape:
      if (stages_per_device != 0 && stages_per_device != 2)
        return Status::bad_input(fmt::format(
            "placement vshape holds exactly 2 stages per device, got stages_per_device {}", stages_per_device));
      return 2 * P;
    case PlacementKind::kExplicit: break;
  }
  return static_cast<int>(placement.devices.size());  // an explicit list: its length is the stage count
}

Result<std::vector<int>> resolve_placement(const PlacementChoice& placement, int stages_per_device, int P) {
  Result<int> S = placement_stage_count(placement, stages_per_device, P);
  if (!S.ok()) return S.status();
  return make_placement(placement.kind, placement.devices, *S, P);
}

Result<Partition> resolve_partition(const Spec& spec, const PartitionChoice& partition, int stages_per_device) {
  if (partition.method == PartitionMethod::kMegatronLayout) {
    auto lp = layout_plan(spec, partition.layout);
    if (!lp.ok()) return lp.status();
    return lp->partition;
  }
  return method_partition(spec, (stages_per_device ? stages_per_device : 1) * spec.cluster.devices,
                          partition.method);
}

Result<NamedPlan> resolve_plan(const Spec& spec, const PartitionChoice& partition, const PlacementChoice& placement,
                               int stages_per_device) {
  const int P = spec.cluster.devices;
  NamedPlan plan;
  if (partition.method == PartitionMethod::kMegatronLayout) {
    auto lp = layout_plan(spec, partition.layout);
    if (!lp.ok()) return lp.status();
    plan.partition = lp->partition;
    const int S = static_cast<int>(plan.partition.size());
    if (stages_per_device != 0 && stages_per_device * P != S) {
      return Status::bad_input(
          fmt::format("layout \"{}\" has {} stages, but stages_per_device {} on {} devices needs {}",
                      partition.layout, S, stages_per_device, P, stages_per_device * P));
    }
    if (placement.kind == PlacementKind::kSequential && S != P) {
      plan.placement = lp->placement;  // the layout's own (looped) placement
    } else {
      auto place = make_placement(placement.kind, placement.devices, S, P);
      if (!place.ok()) return place.status();
      plan.placement = *place;
    }
    plan.desc = fmt::format("Megatron layout \"{}\"", partition.layout);
    return plan;
  }
  Result<int> S = placement_stage_count(placement, stages_per_device, P);
  if (!S.ok()) return S.status();
  auto part = method_partition(spec, *S, partition.method);
  if (!part.ok()) return part.status();
  plan.partition = *part;
  auto place = make_placement(placement.kind, placement.devices, *S, P);
  if (!place.ok()) return place.status();
  plan.placement = *place;
  plan.desc = partition_choice_word(partition);
  return plan;
}

Result<int> placement_stage_count(const PlanSpec& plan, int P) {
  auto placement = parse_placement_choice(plan.placement);
  if (!placement.ok()) return placement.status();
  return placement_stage_count(*placement, plan.stages_per_device, P);
}

Result<std::vector<int>> resolve_placement(const PlanSpec& plan, int P) {
  auto placement = parse_placement_choice(plan.placement);
  if (!placement.ok()) return placement.status();
  return resolve_placement(*placement, plan.stages_per_device, P);
}

Result<Partition> resolve_partition(const Spec& spec, const PlanSpec& plan) {
  auto partition = parse_partition_choice(plan.partition);
  if (!partition.ok()) return partition.status();
  return resolve_partition(spec, *partition, plan.stages_per_device);
}

Result<NamedPlan> resolve_plan(const Spec& spec, const PlanSpec& a) {
  auto partition = parse_partition_choice(a.partition);
  if (!partition.ok()) return partition.status();
  auto placement = parse_placement_choice(a.placement);
  if (!placement.ok()) return placement.status();
  return resolve_plan(spec, *partition, *placement, a.stages_per_device);
}

Result<NamedPlan> baseline_plan(const Spec& spec, BaselineKind kind, const PartitionChoice& partition,
                                int stages_per_device) {
  const int P = spec.cluster.devices;
  const char* name = baseline_name(kind);
  NamedPlan plan;
  const std::string word = partition_choice_word(partition);
  if (partition.method == PartitionMethod::kMegatronLayout) {
    auto lp = layout_plan(spec, partition.layout);
    if (!lp.ok()) return lp.status();
    int V = lp->stages_per_device;
    auto shape = baseline_shape(kind, stages_per_device);
    if (!shape.ok()) return shape.status();
    bool fits = shape->placement == PlacementKind::kLooped ? V >= 2 : V == shape->stages_per_device;
    if (!fits || (stages_per_device != 0 && stages_per_device != V))
      return Status::bad_input(fmt::format(
          "pipeline layout \"{}\" gives {} stages = {} per device on P = {}, but {} runs {}",
          partition.layout, lp->partition.size(), V, P, name,
          shape->placement == PlacementKind::kLooped
              ? fmt::format("{} per device",
                            stages_per_device != 0 ? std::to_string(stages_per_device) : ">= 2")
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
    plan.desc = fmt::format("Megatron layout \"{}\"", partition.layout);
    return plan;
  }
  auto shape = baseline_shape(kind, stages_per_device);
  if (!shape.ok()) return shape.status();
  int S = shape->stages_per_device * P;
  auto part = method_partition(spec, S, partition.method);
  if (!part.ok()) return part.status();
  plan.partition = *part;
  plan.placement = baseline_placement(*shape, P);
  plan.desc = word;
  return plan;
}

}  // namespace ps
